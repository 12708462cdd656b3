package classify

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// The structured layer's first signal is the HTTP status, wherever the
// evidence carries it. Agents hand it over in many places: an envelope's
// httpStatus, a JSON-RPC error whose code is the status (gemini-cli), a
// status field of the error data or of a body embedded in the text
// (Google's {"error":{"code":429}}, statusCode, status_code, httpStatus…),
// the text itself ("API Error: 429", "Error code: 429 - {…}", "(HTTP 403)",
// "429 Too Many Requests", "Request failed with status code 503"), and
// names that stand for a status (Google's RESOURCE_EXHAUSTED, gRPC's
// ResourceExhausted, SDK error classes such as RateLimitError, AWS
// exceptions such as ThrottlingException). statusOf finds the first of
// these, in that order of trust, in the primary evidence (message, data,
// envelope) and only then in stderr. Rules match it with
// match.httpStatus; its class decides when nothing more specific speaks.

// Where a derived status came from.
const (
	StatusFromEnvelope = "envelope"
	StatusFromRPCCode  = "rpc_code"
	StatusFromField    = "field"
	StatusFromText     = "text"
	StatusFromName     = "name"
)

// statusFields are the keys of a JSON object that hold an HTTP status.
// "code" counts only inside an "error" object or beside "status"/"message"
// (Google's error body), and only as a number in 400–599.
var statusFields = []string{"status", "statusCode", "status_code", "httpStatus", "httpStatusCode", "http_status", "http_status_code", "http_code", "httpCode", "httpcode"}

// statusNames maps names that stand for an HTTP status to it: Google API
// status strings (in a status field or as an upper-case word in text),
// gRPC code names ("code = ResourceExhausted"), SDK error classes and AWS
// exception names. Names with a more specific meaning (ModelNotReady,
// context overflow errors…) are rules of their own, not statuses.
var statusNames = map[string]int{
	// Google API status (google.rpc.Code) → its HTTP mapping.
	"RESOURCE_EXHAUSTED": 429, "UNAVAILABLE": 503, "INTERNAL": 500, "DEADLINE_EXCEEDED": 504,
	"UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "INVALID_ARGUMENT": 400, "NOT_FOUND": 404,
	"FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400, "ALREADY_EXISTS": 409, "ABORTED": 409,
	"UNIMPLEMENTED": 501, "CANCELLED": 499,
	// gRPC code names as Go and other clients print them.
	"ResourceExhausted": 429, "Unavailable": 503, "Internal": 500, "DeadlineExceeded": 504,
	"Unauthenticated": 401, "PermissionDenied": 403, "InvalidArgument": 400, "NotFound": 404,
	"FailedPrecondition": 400,
	// SDK error classes (openai, anthropic, groq, mistral, … in JS and
	// Python; LiteLLM) named after the status they stand for.
	"RateLimitError": 429, "AuthenticationError": 401, "PermissionDeniedError": 403,
	"NotFoundError": 404, "BadRequestError": 400, "UnprocessableEntityError": 422,
	"ConflictError": 409, "InternalServerError": 500, "ServiceUnavailableError": 503,
	"BadGatewayError": 502, "GatewayTimeoutError": 504,
	"TooManyRequests": 429, "ServiceUnavailable": 503, "GatewayTimeout": 504, "BadGateway": 502,
	// AWS exception names (Bedrock and other services).
	// The same classes in the JVM SDKs' spelling (LangChain4j, Spring AI).
	"RateLimitException": 429, "ModelNotFoundException": 404,
	"ThrottlingException": 429, "TooManyRequestsException": 429, "ValidationException": 400,
	"AccessDeniedException": 403, "ResourceNotFoundException": 404,
	"InternalServerException": 500, "ServiceUnavailableException": 503,
	"InternalFailure": 500,
}

var (
	// A status in text, with the words that say it is one.
	statusTextRes = sync.OnceValue(func() []*regexp.Regexp {
		return []*regexp.Regexp{
			// "HTTP 403", "(HTTP 403)", "HTTP/1.1 429", "HTTP/2 503", "http: 502"
			regexp.MustCompile(`(?i)\bHTTP(?:/\d(?:\.\d)?)?(?:\s+status)?[\s:]+([45]\d\d)\b`),
			// "status: 429", "status code 503", "statusCode=429", "error code: 429",
			// "last status: 429", "got status 500", "status_code: 502", "code 429",
			// and a JSON field in text that does not parse as an object (a
			// body cut or split over lines): "\"statusCode\": 404"
			regexp.MustCompile(`(?i)\b(?:status(?:[ _]?code)?|error[ _]?code|code)["']?\s*[:=]?\s*\(?([45]\d\d)\b`),
			// "API Error: 429", "Error: 529 {…}", "[API Error: 500 …]", "APIError: 503"
			regexp.MustCompile(`(?i)\b(?:API ?Error|Error)\s*[:\s(]\s*\[?([45]\d\d)\b`),
			// "Request failed with status code 503", "returned 429", "responded with 500",
			// "failed with 429", "received 503"
			regexp.MustCompile(`(?i)\b(?:with status(?: code)?|returned(?: status)?|responded with|failed with|received(?: status)?)\s+([45]\d\d)\b`),
			// "ErrorStatus(500, \"\")", "HttpStatus(429)" (Rust and Java enums)
			regexp.MustCompile(`\b\w*Status\(\s*([45]\d\d)\b`),
			// "…request: 400 Invalid 'messages'" — after a colon or dash, followed
			// by a capitalised word (a lower-case one is prose: "500 lines")
			regexp.MustCompile(`[:\-]\s+([45]\d\d)\s+[A-Z]`),
			// "Request failed: 401 - Authentication Fails", "<p>400 - Invalid
			// …" — after a colon or a tag, the status, a dash and its message
			// on one line (a page's "Title: 404 - Study" is no failure:
			// pageField)
			regexp.MustCompile(`[:：>][ \t]*([45]\d\d)[ \t]+-[ \t]+[A-Z]`),
			// .NET's WebException in any language: "The remote server returned
			// an error: (401) Unauthorized.", "远程服务器返回错误：(400)错误的请求"
			regexp.MustCompile(`(?i:returned an error|返回错误|返回了错误)\s*[:：]?\s*\(([45]\d\d)\)`),
			// botocore's "An error occurred (404) when calling the … operation",
			// and a log's "POST /v1/chat → 404" / "-> 404"
			regexp.MustCompile(`(?i)\bAn error occurred \(([45]\d\d)\)`),
			regexp.MustCompile(`(?:→|->)\s*([45]\d\d)\b`),
			// "returned an invalid status code of 429" (Dart's Dio), "HTTP error
			// from Ollama: 400" (a log's event line)
			regexp.MustCompile(`(?i)\bstatus(?: code)? of\s+([45]\d\d)\b`),
			regexp.MustCompile(`(?i)\bHTTP error\b[^\n:]{0,40}:\s*([45]\d\d)\b`),
			// a common-log access line: "\"POST /v1/chat/completions HTTP/1.1\" 503 -"
			regexp.MustCompile(`"[A-Z]+ [^"\n]+ HTTP/\d(?:\.\d)?"\s+([45]\d\d)\b`),
			// a browser console's failed fetch: "POST https://api.example.com/v1/chat/completions 401"
			regexp.MustCompile(`\b(?:GET|POST|PUT|PATCH|DELETE) https?://[^\s"']+\s+\(?([45]\d\d)\)?(?:\s|$)`),
			// a Gin access log: "[GIN] 2025/03/06 - 11:42:21 | 503 | 42ms | …"
			regexp.MustCompile(`\[GIN\][^\n|]*\|\s*([45]\d\d)\s*\|`),
			// "Response status code was unacceptable: 404." (Alamofire)
			regexp.MustCompile(`(?i)\bstatus code was unacceptable:?\s+([45]\d\d)\b`),
			// "status code not equals 200, code is 401" (a Go client's check)
			regexp.MustCompile(`(?i)\bcode is\s+([45]\d\d)\b`),
			// "503 status code (no body)" (openai-node)
			regexp.MustCompile(`(?i)\b([45]\d\d) status code\b`),
			// "429 Too Many Requests", "503 Service Unavailable", "[429 Too Many Requests]"
			regexp.MustCompile(`(?i)\b([45]\d\d)\s*[-:]?\s*(?:Too Many Requests|Bad Request|Unauthorized|Forbidden|Not Found|Method Not Allowed|Payment Required|Request Timeout|Conflict|Gone|Payload Too Large|Request Entity Too Large|Unprocessable Entity|Too Early|Internal Server Error|Not Implemented|Bad Gateway|Service Unavailable|Gateway Time-?out|Site Overloaded|Overloaded)\b`),
			// "Too Many Requests (429)", "Service Unavailable (503)"
			regexp.MustCompile(`(?i)\b(?:Too Many Requests|Bad Request|Unauthorized|Forbidden|Not Found|Payment Required|Request Timeout|Conflict|Payload Too Large|Unprocessable Entity|Internal Server Error|Bad Gateway|Service Unavailable|Gateway Time-?out|Overloaded)\s*\(([45]\d\d)\)`),
		}
	})
	// A message that starts with a status: "429 {…}", "503 - upstream…",
	// and the "<status> <message>" the JavaScript SDKs (openai-node,
	// anthropic-sdk-typescript and their forks) make of an API error:
	// "429 Provider returned error", "401 Your token has been invalidated",
	// `404 "We couldn't find …"` — a capital or a quote after the number (a
	// lower-case word is prose: "500 lines changed"). "Error: 429 …" is
	// handled above.
	statusLeadRe = lazyRegexp(`\A\s*\[?([45]\d\d)\b(?:\s*[-:{(\[\]]| [A-Z"'])`)
	// Names that stand for a status, as words of their own.
	statusNameRe = lazyRegexp(`\b(RESOURCE_EXHAUSTED|UNAVAILABLE|DEADLINE_EXCEEDED|UNAUTHENTICATED|PERMISSION_DENIED|INVALID_ARGUMENT|FAILED_PRECONDITION|OUT_OF_RANGE|ALREADY_EXISTS|UNIMPLEMENTED|RateLimitError|AuthenticationError|PermissionDeniedError|NotFoundError|BadRequestError|UnprocessableEntityError|ConflictError|InternalServerError|ServiceUnavailableError|BadGatewayError|GatewayTimeoutError|RateLimitException|ModelNotFoundException|ThrottlingException|TooManyRequestsException|ValidationException|AccessDeniedException|ResourceNotFoundException|InternalServerException|ServiceUnavailableException)\b`)
	// gRPC status as clients print it: "code = ResourceExhausted", "code: Unavailable".
	grpcCodeRe = lazyRegexp(`\bcode\s*[=:]\s*(ResourceExhausted|Unavailable|Internal|DeadlineExceeded|Unauthenticated|PermissionDenied|InvalidArgument|NotFound|FailedPrecondition)\b`)
)

// derivedStatus is the status the evidence carries and where it came from.
type derivedStatus struct {
	code   int
	origin string
}

func validStatus(n int) bool { return n >= 400 && n <= 599 }

// status returns the evidence's HTTP status (0 when none), computed once.
func (v *view) status() derivedStatus {
	if v.statusOK {
		return v.st
	}
	v.statusOK = true
	v.st = v.findStatus()
	return v.st
}

func (v *view) findStatus() derivedStatus {
	ev := v.ev
	if validStatus(ev.HTTPStatus) {
		return derivedStatus{ev.HTTPStatus, StatusFromEnvelope}
	}
	if ev.RPCCode != nil && validStatus(*ev.RPCCode) {
		return derivedStatus{*ev.RPCCode, StatusFromRPCCode}
	}
	if n := fieldStatus(v.objectNodes()); n != 0 {
		return derivedStatus{n, StatusFromField}
	}
	primary := []string{FieldMessage, FieldData}
	for _, f := range primary {
		if n := textStatus(v.text(f)); n != 0 {
			return derivedStatus{n, StatusFromText}
		}
	}
	if n := leadStatus(v.objectNodes()); n != 0 {
		return derivedStatus{n, StatusFromText}
	}
	for _, f := range primary {
		if n := nameStatus(v.text(f)); n != 0 {
			return derivedStatus{n, StatusFromName}
		}
	}
	if s := v.text(FieldStderr); s != "" {
		if n := textStatus(s); n != 0 {
			return derivedStatus{n, StatusFromText}
		}
		if n := nameStatus(s); n != 0 {
			return derivedStatus{n, StatusFromName}
		}
	}
	if n := typeStatus(v.objectNodes()); n != 0 {
		return derivedStatus{n, StatusFromName}
	}
	return derivedStatus{}
}

// fieldStatus finds a status in the JSON objects of the evidence: a status
// field (number, numeric string, or a Google status name), or the numeric
// code of an error object.
func fieldStatus(objs []map[string]any) int {
	for _, o := range objs {
		for _, k := range statusFields {
			if n := statusValue(o[k]); n != 0 {
				return n
			}
		}
		if e, ok := o["error"].(map[string]any); ok {
			if n := numericStatus(e["code"]); n != 0 {
				return n
			}
		}
		_, hasStatus := o["status"]
		_, hasMessage := o["message"]
		if hasStatus || hasMessage {
			if n := numericStatus(o["code"]); n != 0 {
				return n
			}
		}
	}
	return 0
}

// statusValue reads a status field: 429, "429", or "RESOURCE_EXHAUSTED".
func statusValue(x any) int {
	if n := numericStatus(x); n != 0 {
		return n
	}
	if s, ok := x.(string); ok {
		return statusNames[strings.TrimSpace(s)]
	}
	return 0
}

func numericStatus(x any) int {
	var s string
	switch t := x.(type) {
	case json.Number:
		s = t.String()
	case string:
		s = strings.TrimSpace(t)
	case float64:
		s = strconv.FormatFloat(t, 'f', -1, 64)
	default:
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || !validStatus(n) {
		return 0
	}
	return n
}

// typeStatuses are error types (Anthropic's, OpenAI's) that stand for a
// status when a body arrives without one.
var typeStatuses = map[string]int{
	"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
	"permission_error": 403, "not_found_error": 404, "request_too_large": 413,
	"rate_limit_error": 429, "api_error": 500, "server_error": 500,
	"timeout_error": 504, "overloaded_error": 529,
}

// typeStatus is the status an error type stands for, the last resort when
// the evidence names no status: {"type":"not_found_error","message":…}.
func typeStatus(objs []map[string]any) int {
	for _, o := range objs {
		if t, ok := o["type"].(string); ok {
			if n := typeStatuses[t]; n != 0 {
				return n
			}
		}
	}
	return 0
}

// textStatus finds a status written in text: the earliest one any of the
// patterns reads (a message says its status before it quotes others).
func textStatus(s string) int {
	if s == "" {
		return 0
	}
	if m := statusLeadRe().FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	best, at := 0, len(s)+1
	for _, re := range statusTextRes() {
		for _, loc := range re.FindAllStringSubmatchIndex(s, -1) {
			if loc[0] >= at {
				break
			}
			if businessCode(s[:loc[0]]) || pageField(s[:loc[0]]) {
				continue
			}
			n, _ := strconv.Atoi(s[loc[2]:loc[3]])
			best, at = n, loc[0]
			break
		}
	}
	return best
}

// leadStatus finds a status that opens an error object's message: a body
// that carries the JavaScript SDKs' "<status> <message>" as its message
// ({"error":{"message":"401 - Authentication Fails"}}) says the status as
// surely as the same text alone does.
func leadStatus(objs []map[string]any) int {
	for _, o := range objs {
		for _, k := range []string{"message", "msg", "detail", "error"} {
			if s, ok := o[k].(string); ok {
				if m := statusLeadRe().FindStringSubmatch(s); m != nil {
					n, _ := strconv.Atoi(m[1])
					return n
				}
			}
		}
	}
	return 0
}

// pageField reports whether the words before a code label it a field of
// a page ("Title: 404 - Study - …", "Content: 404 - …", a fetch tool's
// summary of a web page): the page's words, not a status the evidence
// carries.
func pageField(before string) bool {
	before = strings.ToLower(strings.TrimRight(before, " \t\n:："))
	for _, f := range []string{"title", "content", "heading", "subject", "description", "summary"} {
		if strings.HasSuffix(before, f) {
			return true
		}
	}
	return false
}

// businessCode reports whether the words before a code in text call it a
// business code: a provider's application-level code ("failed with business
// code 500", as Zhipu's and other platforms' clients print theirs), which
// is not an HTTP status whatever its digits.
func businessCode(before string) bool {
	before = strings.ToLower(strings.TrimRight(before, " _-"))
	return strings.HasSuffix(before, "business") || strings.HasSuffix(before, "biz")
}

// nameStatus finds a name that stands for a status.
func nameStatus(s string) int {
	if s == "" {
		return 0
	}
	if m := grpcCodeRe().FindStringSubmatch(s); m != nil {
		return statusNames[m[1]]
	}
	if m := statusNameRe().FindStringSubmatch(s); m != nil {
		return statusNames[m[1]]
	}
	return 0
}
