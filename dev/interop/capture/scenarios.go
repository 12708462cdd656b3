package capture

import (
	"encoding/json"
	"sort"
	"time"

	fp "github.com/acp-guard/acp-guard/dev/interop/fakeprovider"
)

// Scenario is one provider behaviour, expressed for each wire format.
type Scenario struct {
	Name string
	// Steps returns the main-model steps for an API ("openai",
	// "anthropic", "gemini"); nil means the scenario does not apply.
	Steps   func(api string) []fp.Step
	Timeout time.Duration // 0: DefaultTimeout
	Idle    time.Duration // agent stream-idle / request timeout knob
	// Offline points the agent at a host that cannot resolve (OfflineURL)
	// instead of the fake provider: the machine-without-network case.
	Offline bool
	// NoKey launches the agent without its provider credential.
	NoKey bool
	// Chat, when set, gives the steps for Chat Completions agents (API
	// "chat") instead of Steps; a Chat-only scenario has Steps nil.
	Chat func() []fp.Step
}

// DefaultTimeout bounds one capture.
const DefaultTimeout = 90 * time.Second

// MainKey is the script key of the chat requests of each API (every model:
// a failing provider fails side requests such as titles too).
func MainKey(api string) string {
	switch api {
	case "openai":
		return fp.RouteResponses
	case "anthropic":
		return fp.RouteMessages
	case "chat":
		return fp.RouteChat
	default:
		return fp.RouteStreamGenerate
	}
}

// Script returns the fake-provider script of a scenario for an API.
func (s Scenario) Script(api string) fp.Script {
	var steps []fp.Step
	switch {
	case api == "chat" && s.Chat != nil:
		steps = s.Chat()
	case s.Steps != nil:
		steps = s.Steps(bodyAPI(api))
	}
	if steps == nil {
		return nil
	}
	return fp.Script{MainKey(api): steps}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// always fails every request with status and a per-API body.
func always(status int, headers map[string]string, bodies map[string]string) func(string) []fp.Step {
	return func(api string) []fp.Step {
		b, ok := bodies[api]
		if !ok {
			return nil
		}
		return []fp.Step{{Times: -1, Status: status, Headers: headers, Body: raw(b)}}
	}
}

// stream returns the same stream step for every API; error bodies per API.
func stream(step fp.Step, errs map[string]string) func(string) []fp.Step {
	return func(api string) []fp.Step {
		st := step
		st.Times = -1
		if errs != nil {
			e, ok := errs[api]
			if !ok {
				return nil
			}
			st.Error = raw(e)
		}
		return []fp.Step{st}
	}
}

const badGatewayHTML = `"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"`

// Scenarios returns every scenario by name.
func Scenarios() map[string]Scenario {
	list := []Scenario{
		{Name: "success", Steps: func(string) []fp.Step { return []fp.Step{{Times: -1, Text: "Hello! How can I help you today?"}} }},
		{Name: "rate_limit", Steps: always(429, nil, map[string]string{
			"openai":    `{"error":{"message":"Rate limit reached for gpt-5.4 in organization org-fake on requests per min (RPM): Limit 500, Used 500, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			"anthropic": `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50 requests per minute."},"request_id":"req_fake_429"}`,
			"gemini":    `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`,
		})},
		{Name: "rate_limit_retry_after", Steps: always(429, map[string]string{"Retry-After": "3", "retry-after-ms": "3000"}, map[string]string{
			"openai":    `{"error":{"message":"Rate limit reached for gpt-5.4 in organization org-fake on tokens per min (TPM): Limit 30000, Used 30000, Requested 1200. Please try again in 2.4s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			"anthropic": `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 30,000 input tokens per minute."},"request_id":"req_fake_429ra"}`,
			"gemini":    `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3s"}]}}`,
		})},
		{Name: "quota", Steps: always(429, nil, map[string]string{
			"openai":    `{"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			"anthropic": `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your specified workspace API usage limits. You will regain access on 2026-08-01 at 00:00 UTC."},"request_id":"req_fake_quota"}`,
			"gemini":    `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 250, model: gemini-2.5-flash\nPlease retry in 30.5s.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.5-flash"},"quotaValue":"250"}]},{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"30s"}]}}`,
		})},
		{Name: "billing", Steps: func(api string) []fp.Step {
			switch api {
			case "openai":
				return []fp.Step{{Times: -1, Status: 429, Body: raw(`{"error":{"message":"Billing hard limit has been reached","type":"billing_limit_user_error","param":null,"code":"billing_hard_limit_reached"}}`)}}
			case "anthropic":
				return []fp.Step{{Times: -1, Status: 400, Body: raw(`{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},"request_id":"req_fake_billing"}`)}}
			default:
				return []fp.Step{{Times: -1, Status: 400, Body: raw(`{"error":{"code":400,"message":"Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio.","status":"FAILED_PRECONDITION"}}`)}}
			}
		}},
		{Name: "server_error_500", Steps: always(500, nil, map[string]string{
			"openai":    `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
			"anthropic": `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_fake_500"}`,
			"gemini":    `{"error":{"code":500,"message":"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status":"INTERNAL"}}`,
		})},
		{Name: "bad_gateway_502", Steps: func(api string) []fp.Step {
			return []fp.Step{{Times: -1, Status: 502, Headers: map[string]string{"Content-Type": "text/html"}, Body: raw(badGatewayHTML)}}
		}},
		{Name: "unavailable_503", Steps: always(503, nil, map[string]string{
			"openai":    `{"error":{"message":"Service Unavailable","type":"server_error","param":null,"code":null}}`,
			"anthropic": `{"type":"error","error":{"type":"api_error","message":"Service Unavailable"},"request_id":"req_fake_503"}`,
			"gemini":    `{"error":{"code":503,"message":"The service is currently unavailable.","status":"UNAVAILABLE"}}`,
		})},
		{Name: "overloaded", Steps: func(api string) []fp.Step {
			switch api {
			case "openai":
				return []fp.Step{{Times: -1, Status: 503, Body: raw(`{"error":{"message":"Our servers are currently overloaded. Please try again later.","type":"server_error","param":null,"code":"server_is_overloaded"}}`)}}
			case "anthropic":
				return []fp.Step{{Times: -1, Status: 529, Body: raw(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_fake_529"}`)}}
			default:
				return []fp.Step{{Times: -1, Status: 503, Body: raw(`{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)}}
			}
		}},
		{Name: "unauthorized_401", Steps: always(401, nil, map[string]string{
			"openai":    `{"error":{"message":"Incorrect API key provided: sk-test-****fake. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			"anthropic": `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_fake_401"}`,
			"gemini":    `{"error":{"code":401,"message":"Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.","status":"UNAUTHENTICATED"}}`,
		})},
		{Name: "api_key_invalid_400", Steps: always(400, nil, map[string]string{
			"gemini": `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}`,
		})},
		{Name: "forbidden_403", Steps: always(403, nil, map[string]string{
			"openai":    `{"error":{"message":"Country, region, or territory not supported","type":"request_forbidden","param":null,"code":"unsupported_country_region_territory"}}`,
			"anthropic": `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."},"request_id":"req_fake_403"}`,
			"gemini":    `{"error":{"code":403,"message":"Permission denied: Consumer 'api_key:AIza-test-fake' has been suspended.","status":"PERMISSION_DENIED"}}`,
		})},
		{Name: "model_not_found_404", Steps: always(404, nil, map[string]string{
			"openai":    "{\"error\":{\"message\":\"The model `gpt-5.4` does not exist or you do not have access to it.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}",
			"anthropic": `{"type":"error","error":{"type":"not_found_error","message":"model: claude-sonnet-4-6"},"request_id":"req_fake_404"}`,
			"gemini":    `{"error":{"code":404,"message":"models/gemini-2.5-flash is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.","status":"NOT_FOUND"}}`,
		})},
		{Name: "context_overflow", Steps: always(400, nil, map[string]string{
			"openai":    `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`,
			"anthropic": `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215093 tokens > 200000 maximum"},"request_id":"req_fake_ctx"}`,
			"gemini":    `{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`,
		})},
		{Name: "drop_before_text", Steps: stream(fp.Step{Cut: fp.CutBeforeText, Then: fp.ThenDrop}, nil)},
		{Name: "drop_after_text", Steps: stream(fp.Step{Cut: fp.CutAfterText, Then: fp.ThenDrop}, nil)},
		// A stream that opens and ends cleanly with no content at all.
		{Name: "empty_stream", Steps: stream(fp.Step{Cut: fp.CutBeforeText, Then: fp.ThenEnd}, nil)},
		// A complete, well-formed answer with no text.
		{Name: "empty_answer", Steps: stream(fp.Step{Empty: true}, nil)},
		// A stream cut after some text once, then healthy: agents that retry
		// on their own re-stream the partial text.
		{Name: "drop_after_text_then_success", Steps: func(string) []fp.Step {
			return []fp.Step{{Times: 1, Cut: fp.CutAfterText, Then: fp.ThenDrop}, {Times: -1}}
		}},
		// A stream that fails after some text once, then a healthy one:
		// agents that retry on their own re-stream the partial text.
		{Name: "text_then_error_then_success", Steps: func(api string) []fp.Step {
			errs := map[string]string{
				"openai":    `{"type":"response.failed","sequence_number":7,"response":{"id":"resp_fake_1","object":"response","status":"failed","error":{"code":"server_error","message":"An error occurred while processing your request."}}}`,
				"anthropic": `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
				"gemini":    `{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`,
			}
			return []fp.Step{{Times: 1, Cut: fp.CutAfterText, Then: fp.ThenError, Error: raw(errs[api])}, {Times: -1}}
		}},
		{Name: "stream_error", Steps: stream(fp.Step{Cut: fp.CutBeforeText, Then: fp.ThenError}, map[string]string{
			"openai":    `{"type":"response.failed","sequence_number":4,"response":{"id":"resp_fake_1","object":"response","status":"failed","error":{"code":"server_error","message":"An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists."}}}`,
			"anthropic": `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			"gemini":    `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`,
		})},
		{Name: "text_then_error", Steps: stream(fp.Step{Cut: fp.CutAfterText, Then: fp.ThenError}, map[string]string{
			"openai":    `{"type":"response.failed","sequence_number":7,"response":{"id":"resp_fake_1","object":"response","status":"failed","error":{"code":"server_error","message":"An error occurred while processing your request."}}}`,
			"anthropic": `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
			"gemini":    `{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`,
		})},
		{Name: "stall", Idle: 3 * time.Second, Timeout: 90 * time.Second, Steps: func(api string) []fp.Step {
			if api == "openai" {
				// codex's idle timeout is per stream event: stall mid-stream.
				return []fp.Step{{Times: -1, Cut: fp.CutBeforeText, Then: fp.ThenStall}}
			}
			// claude (API_TIMEOUT_MS) and gemini time out waiting for headers.
			return []fp.Step{{Times: -1, Delay: fp.Duration(10 * time.Minute)}}
		}},
	}
	list = append(list, fieldScenarios...)
	m := map[string]Scenario{}
	for _, s := range list {
		m[s.Name] = s
	}
	return m
}

// ScenarioNames returns the scenario names in capture order: the most
// useful first.
func ScenarioNames() []string {
	first := []string{"success", "rate_limit", "server_error_500", "unauthorized_401", "context_overflow"}
	seen := map[string]bool{}
	for _, n := range first {
		seen[n] = true
	}
	var rest []string
	for n := range Scenarios() {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(first, rest...)
}
