package classify

import (
	"encoding/json"
	"testing"
)

func TestDerivedStatus(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, tt := range []struct {
		name   string
		ev     Evidence
		want   int
		origin string
	}{
		{"envelope", Evidence{HTTPStatus: 503, Message: "HTTP 429"}, 503, StatusFromEnvelope},
		{"JSON-RPC code is the status", Evidence{RPCCode: code(429), Message: "Something went wrong"}, 429, StatusFromRPCCode},
		{"JSON-RPC error code is not", Evidence{RPCCode: code(-32603), Message: "Internal error"}, 0, ""},
		{"status field of data", Evidence{Data: json.RawMessage(`{"statusCode":502,"message":"x"}`)}, 502, StatusFromField},
		{"numeric string", Evidence{Data: json.RawMessage(`{"status":"429"}`)}, 429, StatusFromField},
		{"Google error body code", Evidence{Message: `{"error":{"code":403,"message":"denied","status":"PERMISSION_DENIED"}}`}, 403, StatusFromField},
		{"Google status name alone", Evidence{Data: json.RawMessage(`{"error":{"status":"RESOURCE_EXHAUSTED"}}`)}, 429, StatusFromField},
		{"Python repr body", Evidence{Message: `Error code: 429 - {'error': {'message': 'slow', 'type': 'tokens'}}`}, 429, StatusFromText},
		{"API Error prefix", Evidence{Message: `API Error: 529 {"type":"error"}`}, 529, StatusFromText},
		{"leading status", Evidence{Message: `402 {"error":{"message":"No"}}`}, 402, StatusFromText},
		{"leading status and reason", Evidence{Message: "405 Method Not Allowed"}, 405, StatusFromText},
		{"status and a dash after a colon", Evidence{Message: "Request failed: 401 - Authentication Fails"}, 401, StatusFromText},
		{"status and a dash after a wrapper's colon", Evidence{Message: "provider call: 400 - Invalid service_tier argument"}, 400, StatusFromText},
		{".NET WebException in Chinese", Evidence{Message: "System.Net.WebException: 远程服务器返回错误：(400)错误的请求。"}, 400, StatusFromText},
		{"a page title's number and dash is no status", Evidence{Message: "web_fetch: Title: 404 - Study - Trinity College"}, 0, ""},
		{"status opening an error body's message", Evidence{Message: `upstream: {"error":{"message":"401 - Authentication Fails"}}`}, 401, StatusFromText},
		{"a lower-case word after the number is prose, in a body too", Evidence{Message: `{"message":"500 lines were read"}`}, 0, ""},
		{"HTTP/1.1 line", Evidence{Message: `HTTP Request: POST http://x/v1 "HTTP/1.1 502 Bad Gateway"`}, 502, StatusFromText},
		{"(HTTP 403)", Evidence{Message: "request refused (HTTP 403)"}, 403, StatusFromText},
		{"axios", Evidence{Message: "Request failed with status code 503"}, 503, StatusFromText},
		{"reason then code", Evidence{Message: "Too Many Requests (429)"}, 429, StatusFromText},
		{"gRPC code name", Evidence{Message: "rpc error: code = Unavailable desc = connection closed"}, 503, StatusFromName},
		{"SDK class", Evidence{Message: "openai.RateLimitError: slow down"}, 429, StatusFromName},
		{"AWS exception", Evidence{Message: "ValidationException: bad input"}, 400, StatusFromName},
		{"JVM SDK exception", Evidence{Stderr: []string{"dev.example.llm.RateLimitException: slow down"}}, 429, StatusFromName},
		{"a business code is not a status", Evidence{Message: "quota lookup failed with business code 500"}, 0, ""},
		{"a status after a business code", Evidence{Message: "businessCode 500; failed with status 503"}, 503, StatusFromText},
		{"stderr when the report has none", Evidence{Message: "Internal error", Stderr: []string{"got status: 500"}}, 500, StatusFromText},
		{"the report before stderr", Evidence{Message: "Error: 429 slow", Stderr: []string{"got status: 500"}}, 429, StatusFromText},
		{"API Error (status …)", Evidence{Message: "API Error (429 Too many tokens, please wait before trying again.)"}, 429, StatusFromText},
		{"status code (no body)", Evidence{Message: "503 status code (no body)"}, 503, StatusFromText},
		{"status code of", Evidence{Message: "DioException [bad response]: The request returned an invalid status code of 429."}, 429, StatusFromText},
		{"Alamofire's unacceptable status", Evidence{Message: "requestFailed(message: \"Response status code was unacceptable: 404.\")"}, 404, StatusFromText},
		{"a common-log access line", Evidence{Message: "127.0.0.1 - - [13/Sep/2023 20:20:27] \"POST /v1/chat/completions HTTP/1.1\" 503 -"}, 503, StatusFromText},
		{"a Gin access log", Evidence{Message: "[GIN] 2025/03/06 - 11:42:21 | 503 |   42.04ms |  127.0.0.1 | POST \"/api/generate\""}, 503, StatusFromText},
		{"code is", Evidence{Message: "gtp api status code not equals 200,code is 401"}, 401, StatusFromText},
		{"a browser console's failed fetch", Evidence{Message: "plugin:notes-ai:120          POST https://api.example.com/v1/chat/completions 401"}, 401, StatusFromText},
		{"a fetch line with a body size is not a status", Evidence{Message: "GET https://cdn.example.com/app.js 404kB"}, 0, ""},
		{"HTTP error from a server", Evidence{Message: "event: Upstream HTTP error from Ollama: 400"}, 400, StatusFromText},
		{"a gateway error's name", Evidence{Message: "litellm.BadGatewayError: BadGatewayError: OpenAIException -"}, 502, StatusFromName},
		{"a count of codes is no status", Evidence{Message: "a list of 404 status pages"}, 0, ""},
		{"an error type, when nothing else says", Evidence{Message: `{"type":"not_found_error","message":"model: x"}`}, 404, StatusFromName},
		{"a written status before an error type", Evidence{Message: `Error code: 401 - {'error': {'type': 'invalid_request_error'}}`}, 401, StatusFromText},
		{"JS SDK: status then message", Evidence{Message: "429 Provider returned error"}, 429, StatusFromText},
		{"JS SDK: status then quoted body", Evidence{Message: `404 "We couldn't find that"`}, 404, StatusFromText},
		{"a leading count in prose is not a status", Evidence{Message: "500 lines were changed"}, 0, ""},
		{"a count is not a status", Evidence{Message: "processed 429 files"}, 0, ""},
		{"a 2xx is not an error status", Evidence{Message: `"HTTP/1.1 200 OK"`}, 0, ""},
		{"tokens are not a status", Evidence{Message: "used 500 tokens"}, 0, ""},
		{"exit code", Evidence{Message: "exit code 1"}, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := newView(&tt.ev).status()
			if got.code != tt.want || got.origin != tt.origin {
				t.Errorf("got %d from %q, want %d from %q", got.code, got.origin, tt.want, tt.origin)
			}
		})
	}
}

func TestUnwrap(t *testing.T) {
	for in, want := range map[string]string{
		"400 Provider\n   returned error":      "400 Provider returned error",
		"Incorrect API\r\n    key provided":    "Incorrect API key provided",
		"isn\u2019t supported":                 "isn't supported",
		"no breaks":                            "no breaks",
		"trailing \t\n\nnext":                  "trailing next",
		`details.\nPlease retry in 5s`:         "details. Please retry in 5s",
		`a body \\n escaped twice`:             `a body \ escaped twice`,
		`limit \r\n  \nnext`:                   "limit next",
		`must be \u003c= 8192`:                 "must be <= 8192",
		`\u8bf7\u6c42\u8fc7\u4e8e\u9891\u7e41`: "请求过于频繁",
		`pair \ud83d\ude00 ok`:                 "pair 😀 ok",
		`lone \ud83d and \uzzzz`:               `lone \ud83d and \uzzzz`,
		`tab\u0009here`:                        "tab here",
	} {
		if got := unwrap(in); got != want {
			t.Errorf("unwrap(%q) = %q, want %q", in, got, want)
		}
	}
	if got := stderrText([]string{"Error: 400 Provider", "   returned error", "next line"}); got != "Error: 400 Provider returned error\nnext line" {
		t.Errorf("stderr continuation: got %q", got)
	}
}

func TestIsRetryNote(t *testing.T) {
	for s, want := range map[string]bool{
		"WARN codex_core::responses_retry: stream disconnected - retrying sampling request (1/5 in 193ms)...": true,
		"API Error (Connection error.) · Retrying in 1 seconds… (attempt 1/10)":                               true,
		"Retrying (attempt 1/2, waiting 2s)...":                                                               true,
		"Request failed, will retry":                                                                          true,
		"ERROR codex_core::client: dns error: failed to lookup address information":                           false,
		"unexpected status 502 Bad Gateway":                                                                   false,
	} {
		if got := IsRetryNote(s); got != want {
			t.Errorf("IsRetryNote(%q) = %v, want %v", s, got, want)
		}
	}
}
