package classify_test

import (
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/classify"
)

func TestParseErrorLine(t *testing.T) {
	for _, tt := range []struct {
		text   string
		ok     bool
		head   string
		body   string
		status int
		shape  bool
	}{
		// Agents' own error lines, every head and shape.
		{"Error: 400 This model's maximum context length is 128000 tokens.", true, "Error:", "400 This model's maximum context length is 128000 tokens.", 400, true},
		{"error: Connection error.", true, "error:", "Connection error.", 0, false},
		{"ERROR: upstream connect error", true, "ERROR:", "upstream connect error", 0, false},
		{"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}", true, "API Error:", "", 529, true},
		{"[API Error: 429 Resource has been exhausted (e.g. check quota).]", true, "API Error:", "429 Resource has been exhausted (e.g. check quota).", 429, true},
		{"✕ [API Error: Model stream ended with an invalid chunk]", true, "API Error:", "Model stream ended with an invalid chunk", 0, false},
		{"❌ Error: fetch failed", true, "Error:", "fetch failed", 0, false},
		{"✕ Request failed with status 429", true, "✕", "Request failed with status 429", 429, true},
		{"❌ Wrong: use a 404 here", false, "", "", 0, false},
		{"✗ fails on Windows", false, "", "", 0, false},
		{"Error code: 429 - {'error': {'message': 'Rate limit reached', 'type': 'requests'}}", true, "Error code:", "", 429, true},
		{"RateLimitError: 429 Too Many Requests", true, "RateLimitError:", "429 Too Many Requests", 429, true},
		{"openai.APIConnectionError: Connection error.", true, "openai.APIConnectionError:", "Connection error.", 0, false},
		{"ThrottlingException: Rate exceeded", true, "ThrottlingException:", "Rate exceeded", 0, false},
		{"Error: Authentication failed with provider at http://127.0.0.1:8787/v1 (HTTP 403).\n  Check your COPILOT_PROVIDER_API_KEY.", true, "Error:", "", 403, true},
		{"Error: Failed to get response from the AI model; retried 5 times (total retry wait time: 14.45 seconds) Last error: 502 Bad Gateway", true, "Error:", "", 502, true},
		{"API Error: 502 <html>\r\n<head><title>502 Bad Gateway</title></head>\r\n</html>", true, "API Error:", "", 502, true},
		{"Error: request failed\n{\n  \"error\": {\"code\": 503, \"message\": \"unavailable\"}\n}", true, "Error:", "", 503, true},
		{"  \n Error: The operation timed out. \n", true, "Error:", "The operation timed out.", 0, false},
		// Prose, quoted compiler output, too much text: not one error line.
		{"Error: I could not find the file you mentioned. Could you check the path?", false, "", "", 0, false},
		{"Error: the function returns 404 when the user is missing.\n\nHere is the fix:\n```go\nreturn nil\n```", false, "", "", 0, false},
		{"Error: 500 lines were too many.\nSo I split the file in two.", false, "", "", 0, false},
		// A leading number followed by a lower-case word is prose, not a status.
		{"Error: 404 means the route is wrong.", true, "Error:", "404 means the route is wrong.", 0, false},
		{"Error: 500 lines were too many.", true, "Error:", "500 lines were too many.", 0, false},
		{"Error: 503", true, "Error:", "503", 503, true},
		{"Error: (502) Bad Gateway", true, "Error:", "(502) Bad Gateway", 502, true},
		{"Error: 401 - invalid key", true, "Error:", "401 - invalid key", 401, true},
		{"Error: 4000 tokens is too many", true, "Error:", "4000 tokens is too many", 0, false},
		{"Error: upstream said status: 502", true, "Error:", "upstream said status: 502", 502, true},
		{"error[E0308]: mismatched types\n --> src/main.rs:2:5", false, "", "", 0, false},
		{"error: could not compile `foo` due to 2 previous errors", true, "error:", "could not compile `foo` due to 2 previous errors", 0, false},
		{"The request failed with Error: 429", false, "", "", 0, false},
		{"Error:", false, "", "", 0, false},
		{"Error: [API Error: 429]" + strings.Repeat(" padding", 600), false, "", "", 0, false},
		{"Errors: 3 found", false, "", "", 0, false},
		{"Error handling request {", false, "", "", 0, false},
		{"Here is the answer.", false, "", "", 0, false},
		{"4Error: x", false, "", "", 0, false},
	} {
		r, ok := classify.ParseErrorLine(tt.text)
		if ok != tt.ok {
			t.Errorf("ParseErrorLine(%q): ok %v, want %v", tt.text, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		if r.Head != tt.head || (tt.body != "" && r.Body != tt.body) || r.Status != tt.status || r.Shape() != tt.shape {
			t.Errorf("ParseErrorLine(%q) = %+v (shape %v), want head %q body %q status %d shape %v", tt.text, r, r.Shape(), tt.head, tt.body, tt.status, tt.shape)
		}
	}
}

func TestErrorLinePending(t *testing.T) {
	for _, tt := range []struct {
		text string
		want bool
	}{
		{"", true}, {"Err", true}, {"Error", true}, {"Error ", true}, {"API ", true}, {"API Err", true},
		{"Error co", true}, {"[", true}, {"✕ ", true}, {"\xe2\x9c", true}, {"[API", true}, {"ERR", true},
		{"RateLimit", false}, // an error type's name counts only when it arrives whole
		{"Hello", false}, {"Hello ", false}, {"Hello!", false}, {"Sure, here", false}, {"The answer", false},
		{"Errors", false}, {"Error handling", false}, {"A", true}, {"AP", true}, {"API Error ", true},
		{"Error: 429", false}, // decided (a head)
		{strings.Repeat("a", 100), false},
	} {
		if got := classify.ErrorLinePending(tt.text); got != tt.want {
			t.Errorf("ErrorLinePending(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestParseNote(t *testing.T) {
	for _, tt := range []struct {
		text string
		want bool
	}{
		{"Retrying (attempt 1/2, waiting 2s)...", true},
		{"API Error (Connection error.) · Retrying in 1 seconds… (attempt 1/10)", true},
		{"Info: Request failed due to a transient API error. Retrying...", true},
		{"Info: Response was interrupted due to a server error. Retrying...", true},
		{"Info: The conversation exceeded the model's context limit. Compacting history and retrying...", true},
		{"Attempt 1 failed with status 502. Retrying with backoff... _ApiError: {\"error\":{\"code\":502}}", true},
		{"Request failed. Retrying in 2000ms... (3 attempts left)", true},
		{"Retry finished, resuming.", true}, // pi, after its notes
		{"Retrying exhausted, giving up.", true},
		{"Retry failed: 429 Too Many Requests", true},
		{"Retry failed requests by hand.", false},
		// Stderr notes of the captured agents (testdata/transcripts/real).
		{"2026-11-29T17:18:30.925275Z  WARN codex_core::responses_retry: stream disconnected - retrying sampling request (1/5 in 188ms)...", true},
		{"Attempt 2 failed with status 429. Retrying with backoff... _ApiError: {\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\"}}", true},
		{"Resource has been exhausted (e.g. check quota). Suggested retry after 3s.. Retrying after 5677ms...", true},
		{"Rate limited, will retry after 30s", true},
		{"⚠ Provider overloaded, retrying", true},
		{"[warn] Note: retrying request", true},
		{"retry 2/5: connection reset", true},
		{"  Retrying...  ", true},
		// Prose about retrying, or too much.
		{"Retry the request with a smaller batch.", false},
		{"I will retry in 5 seconds (attempt 2/3).", false},
		{"Let me retry that command in 10s.", false},
		{"The client retries in 5s by default.", false},
		{"Retrying is a good idea here", false},
		{"Retrying...\nHere is the answer.", false},
		{"Attempt 1 failed. Retrying in 5s" + strings.Repeat(".", 600), false},
		{"```\nRetrying in 5s\n```", false},
		{"Hello from the fake provider.", false},
	} {
		if _, got := classify.ParseNote(tt.text); got != tt.want {
			t.Errorf("ParseNote(%q) = %v, want %v", tt.text, got, tt.want)
		}
		if tt.want && !classify.MayBeNote([]byte(`"`+tt.text+`"`)) {
			t.Errorf("MayBeNote(%q) = false for a note", tt.text)
		}
	}
}

func TestStatedRetries(t *testing.T) {
	for _, tt := range []struct {
		text string
		want int
	}{
		{"Error: Failed to get response from the AI model; retried 5 times (total retry wait time: 14.45 seconds) Last error: 502 Bad Gateway", 5},
		{"request failed after 3 retries", 3},
		{"gave up after 4 attempts: 503", 3},
		{"Error: 429 Too Many Requests", 0},
	} {
		if got := classify.StatedRetries(tt.text); got != tt.want {
			t.Errorf("StatedRetries(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}
