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
		return codexFailure(kind, secs, resetAt)
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
		text = "Error: the demo frobnicator returned an unexpected value"
	default:
		return failure{}, unknownKind(kind)
	}
	return failure{chunk: text}, nil
}

// codexFailure imitates codex-acp: code -32603 "Internal error" with the
// codex error message and codex_error_info in data.
func codexFailure(kind string, secs int64, resetAt time.Time) (failure, error) {
	type data struct {
		Message         string `json:"message"`
		CodexErrorInfo  any    `json:"codex_error_info,omitempty"`
		ResetsInSeconds *int64 `json:"resets_in_seconds,omitempty"`
		ResetsAt        *int64 `json:"resets_at,omitempty"`
	}
	var d data
	switch kind {
	case KindTransient:
		d = data{
			Message:        "stream disconnected before completion: error sending request for url (https://api.openai.com/v1/responses)",
			CodexErrorInfo: map[string]any{"response_stream_disconnected": map[string]any{"http_status_code": nil}},
		}
	case KindOverloaded:
		d = data{Message: "exceeded retry limit, last status: 503 Service Unavailable",
			CodexErrorInfo: map[string]any{"response_too_many_failed_attempts": map[string]any{"http_status_code": 503}}}
	case KindRateLimit:
		d = data{Message: "exceeded retry limit, last status: 429 Too Many Requests",
			CodexErrorInfo: map[string]any{"response_too_many_failed_attempts": map[string]any{"http_status_code": 429}}}
	case KindQuota:
		at := resetAt.Unix()
		d = data{Message: fmt.Sprintf("You've hit your usage limit. Upgrade to Pro or try again in %ds.", secs),
			CodexErrorInfo: "usage_limit_exceeded", ResetsInSeconds: &secs, ResetsAt: &at}
	case KindAuth:
		d = data{Message: "unexpected status 401 Unauthorized: Incorrect API key provided: sk-demo****. You can find your API key at https://platform.openai.com/account/api-keys.",
			CodexErrorInfo: "unauthorized"}
	case KindContextOverflow:
		d = data{Message: "Codex ran out of room in the model's context window. Start a new conversation or clear earlier history before retrying.",
			CodexErrorInfo: "context_window_exceeded"}
	case KindUnknown:
		d = data{Message: "the demo frobnicator returned an unexpected value", CodexErrorInfo: "other"}
	default:
		return failure{}, unknownKind(kind)
	}
	return failure{rpc: internal(d)}, nil
}

// claudeFailure imitates claude-agent-acp: code -32603 with the Anthropic
// API error in the message.
func claudeFailure(kind string, resetAt time.Time) (failure, error) {
	api := func(status int, typ, msg string) string {
		body := rawJSON(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
		return fmt.Sprintf("API Error: %d %s", status, body)
	}
	var msg string
	switch kind {
	case KindTransient:
		msg = api(500, "api_error", "Internal server error")
	case KindOverloaded:
		msg = api(529, "overloaded_error", "Overloaded")
	case KindRateLimit:
		msg = api(429, "rate_limit_error", "This request would exceed the rate limit for your organization of 50,000 input tokens per minute.")
	case KindQuota:
		msg = fmt.Sprintf("Claude AI usage limit reached|%d", resetAt.Unix())
	case KindAuth:
		msg = api(401, "authentication_error", "invalid x-api-key")
	case KindContextOverflow:
		msg = api(400, "invalid_request_error", "prompt is too long: 215000 tokens > 200000 maximum")
	case KindUnknown:
		msg = "the demo frobnicator returned an unexpected value"
	default:
		return failure{}, unknownKind(kind)
	}
	return failure{rpc: &rpcError{Code: codeInternalError, Message: msg}}, nil
}

// geminiFailure imitates gemini --acp: code -32603 whose message is the
// Google API error JSON.
func geminiFailure(kind string, secs int64) (failure, error) {
	api := func(code int, status, msg string, details ...any) string {
		e := map[string]any{"code": code, "message": msg, "status": status}
		if len(details) > 0 {
			e["details"] = details
		}
		return string(rawJSON(map[string]any{"error": e}))
	}
	retryInfo := func(s int64) any {
		return map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": fmt.Sprintf("%ds", s)}
	}
	var msg string
	switch kind {
	case KindTransient, KindOverloaded:
		msg = api(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
	case KindRateLimit:
		msg = api(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", retryInfo(7))
	case KindQuota:
		msg = api(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details.",
			map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure",
				"violations": []any{map[string]any{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}}},
			retryInfo(secs))
	case KindAuth:
		msg = api(401, "UNAUTHENTICATED", "API key not valid. Please pass a valid API key.")
	case KindContextOverflow:
		msg = api(400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).")
	case KindUnknown:
		msg = "the demo frobnicator returned an unexpected value"
	default:
		return failure{}, unknownKind(kind)
	}
	return failure{rpc: &rpcError{Code: codeInternalError, Message: msg}}, nil
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
