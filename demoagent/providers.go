package demoagent

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Error kinds accepted by Options.Error.
const (
	KindTransient       = "transient"        // 5xx / stream disconnect
	KindOverloaded      = "overloaded"       // 529 / overloaded
	KindRateLimit       = "rate-limit"       // 429 with a short retry delay
	KindQuota           = "quota"            // usage quota with a reset time
	KindAuth            = "auth"             // 401 invalid API key
	KindContextOverflow = "context-overflow" // prompt too long
	KindUnknown         = "unknown"          // unclassifiable text
)

// ErrorKinds lists the kinds accepted by Options.Error.
func ErrorKinds() []string {
	return []string{KindTransient, KindOverloaded, KindRateLimit, KindQuota, KindAuth, KindContextOverflow, KindUnknown}
}

// Adapter families whose error shapes the agent imitates.
const (
	familyGeneric = "generic"
	familyCursor  = "cursor"
	familyCodex   = "codex"
	familyClaude  = "claude"
	familyGemini  = "gemini"
)

// familyOf picks the error shape from an agent name.
func familyOf(agentName string) string {
	n := strings.ToLower(agentName)
	switch {
	case strings.Contains(n, "cursor"):
		return familyCursor
	case strings.Contains(n, "codex"):
		return familyCodex
	case strings.Contains(n, "claude"):
		return familyClaude
	case strings.Contains(n, "gemini"):
		return familyGemini
	}
	return familyGeneric
}

// failure is how a turn fails: a JSON-RPC error response, or (Cursor) a
// control chunk followed by end_turn.
type failure struct {
	rpc   *rpcError
	chunk string
}

func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("demoagent: encoding error data: " + err.Error())
	}
	return b
}

func internal(data any) *rpcError {
	return &rpcError{Code: codeInternalError, Message: "Internal error", Data: rawJSON(data)}
}

// providerFailure builds the failure of kind as the adapter family reports
// it. now and resetIn place reset hints for KindQuota.
func providerFailure(family, kind string, now time.Time, resetIn time.Duration) (failure, error) {
	secs := int64(resetIn.Round(time.Second) / time.Second)
	resetAt := now.Add(resetIn).UTC()
	switch family {
	case familyCursor:
		return cursorFailure(kind, secs)
	case familyCodex:
		return codexFailure(kind, secs)
	case familyClaude:
		return claudeFailure(kind, resetAt)
	case familyGemini:
		return geminiFailure(kind, secs)
	}
	return genericFailure(kind, secs)
}

func unknownKind(kind string) error {
	return fmt.Errorf("demo agent: unknown error kind %q (want one of %s)", kind, strings.Join(ErrorKinds(), ", "))
}

func cursorFailure(kind string, secs int64) (failure, error) {
	var text string
	switch kind {
	case KindTransient:
		text = "Error: RetriableError: [unavailable] PING timed out"
	case KindOverloaded:
		text = "Error: RetriableError: [resource_exhausted] Provider overloaded, please try again"
	case KindRateLimit:
		text = "Error: RetriableError: [resource_exhausted] Rate limit exceeded"
	case KindQuota:
		return failure{rpc: &rpcError{Code: codeInternalError, Message: fmt.Sprintf("You've hit your usage limit. Try again in %ds.", secs)}}, nil
	case KindAuth:
		return failure{rpc: &rpcError{Code: -32000, Message: "Authentication required"}}, nil
	case KindContextOverflow:
		return failure{rpc: &rpcError{Code: codeInternalError, Message: "Prompt is too long: the conversation exceeds the model's context window"}}, nil
	case KindUnknown:
		return failure{rpc: &rpcError{Code: codeInternalError, Message: "the demo frobnicator returned an unexpected value"}}, nil
	default:
		return failure{}, unknownKind(kind)
	}
	return failure{chunk: text}, nil
}

// codexFailure imitates codex-acp 0.16 (docs/real-agent-errors.md): code
// -32603 "Internal error", data {message, codex_error_info}.
func codexFailure(kind string, secs int64) (failure, error) {
	type data struct {
		Message        string `json:"message"`
		CodexErrorInfo any    `json:"codex_error_info"`
	}
	const url = ", url: https://api.openai.com/v1/responses"
	var d data
	switch kind {
	case KindTransient:
		d = data{"stream disconnected before completion: Transport error: network error: error decoding response body", "other"}
	case KindOverloaded:
		d = data{"Selected model is at capacity. Please try a different model.", "server_overloaded"}
	case KindRateLimit:
		d = data{"exceeded retry limit, last status: 429 Too Many Requests",
			map[string]any{"response_too_many_failed_attempts": map[string]any{"http_status_code": 429}}}
	case KindQuota:
		// Not seen through the API-key provider (429 loses its body there);
		// this is the ChatGPT-plan usage limit, with its reset hint in text.
		d = data{fmt.Sprintf("You've hit your usage limit. Upgrade to Pro or try again in %ds.", secs), "usage_limit_exceeded"}
	case KindAuth:
		d = data{"unexpected status 401 Unauthorized: Incorrect API key provided: sk-demo-****fake. You can find your API key at https://platform.openai.com/account/api-keys." + url, "other"}
	case KindContextOverflow:
		d = data{`{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`, "other"}
	case KindUnknown:
		d = data{"the demo frobnicator returned an unexpected value", "other"}
	default:
		return failure{}, unknownKind(kind)
	}
	return failure{rpc: internal(d)}, nil
}

// anthropicError is the Anthropic API error body, fields in wire order.
type anthropicError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

// claudeFailure imitates claude-agent-acp 0.23 (docs/real-agent-errors.md):
// code -32603, message "Internal error: " + Claude Code's text, no data.
func claudeFailure(kind string, resetAt time.Time) (failure, error) {
	api := func(status int, typ, msg string) string {
		e := anthropicError{Type: "error", RequestID: fmt.Sprintf("req_demo_%d", status)}
		e.Error.Type, e.Error.Message = typ, msg
		return fmt.Sprintf("API Error: %d %s", status, rawJSON(e))
	}
	var msg string
	switch kind {
	case KindTransient:
		msg = api(500, "api_error", "Internal server error")
	case KindOverloaded:
		msg = api(529, "overloaded_error", "Overloaded")
	case KindRateLimit:
		msg = api(429, "rate_limit_error", "This request would exceed the rate limit for your organization of 50 requests per minute.")
	case KindQuota:
		msg = api(429, "rate_limit_error", "You have reached your specified workspace API usage limits. You will regain access on "+
			resetAt.Format("2006-01-02 at 15:04")+" UTC.")
	case KindAuth:
		msg = "Invalid API key · Fix external API key"
	case KindContextOverflow:
		msg = "Prompt is too long"
	case KindUnknown:
		msg = "the demo frobnicator returned an unexpected value"
	default:
		return failure{}, unknownKind(kind)
	}
	return failure{rpc: &rpcError{Code: codeInternalError, Message: "Internal error: " + msg}}, nil
}

// googleError is the Google API error body, fields in wire order.
type googleError struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []any  `json:"details,omitempty"`
	} `json:"error"`
}

// geminiFailure imitates gemini-cli 0.61 (docs/real-agent-errors.md): the
// JSON-RPC code is the HTTP status and the message the API's error body.
// (The real 429 arrives with a plain message; the demo keeps the body so
// that a retryDelay can be tested.)
func geminiFailure(kind string, secs int64) (failure, error) {
	api := func(code int, status, msg string, details ...any) failure {
		var e googleError
		e.Error.Code, e.Error.Message, e.Error.Status, e.Error.Details = code, msg, status, details
		return failure{rpc: &rpcError{Code: code, Message: string(rawJSON(e))}}
	}
	retryInfo := func(s int64) any {
		return map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": fmt.Sprintf("%ds", s)}
	}
	switch kind {
	case KindTransient:
		return api(500, "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"), nil
	case KindOverloaded:
		return api(503, "UNAVAILABLE", "The model is overloaded. Please try again later."), nil
	case KindRateLimit:
		return api(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", retryInfo(7)), nil
	case KindQuota:
		return api(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details.",
			map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure",
				"violations": []any{map[string]any{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}}},
			retryInfo(secs)), nil
	case KindAuth:
		return api(401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."), nil
	case KindContextOverflow:
		return api(400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."), nil
	case KindUnknown:
		return failure{rpc: &rpcError{Code: codeInternalError, Message: "the demo frobnicator returned an unexpected value"}}, nil
	}
	return failure{}, unknownKind(kind)
}

// genericFailure is an agent of no known family: -32603 with a plain data
// message (or ACP's -32000 for authentication).
func genericFailure(kind string, secs int64) (failure, error) {
	var msg string
	switch kind {
	case KindTransient:
		msg = "503 Service Unavailable: upstream provider unavailable"
	case KindOverloaded:
		msg = "529 Overloaded: the provider is overloaded"
	case KindRateLimit:
		msg = "429 Too Many Requests: rate limit exceeded, retry after 5s"
	case KindQuota:
		msg = fmt.Sprintf("usage quota exceeded; try again in %ds", secs)
	case KindAuth:
		return failure{rpc: &rpcError{Code: -32000, Message: "Authentication required",
			Data: rawJSON(map[string]string{"message": "401 Unauthorized: invalid api key"})}}, nil
	case KindContextOverflow:
		msg = "400 Bad Request: prompt is too long for the model's context window"
	case KindUnknown:
		msg = "the demo frobnicator returned an unexpected value"
	default:
		return failure{}, unknownKind(kind)
	}
	return failure{rpc: internal(map[string]string{"message": msg})}, nil
}
