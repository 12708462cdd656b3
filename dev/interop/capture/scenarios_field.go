package capture

import (
	"strings"

	fp "github.com/acp-guard/acp-guard/dev/interop/fakeprovider"
)

// OfflineURL is the provider URL of Offline scenarios: the .invalid
// top-level domain never resolves (RFC 2606), so the agent meets the DNS
// failure a machine without network gives it.
const OfflineURL = "http://provider.invalid"

// fieldScenarios are the failures a new user meets before any provider
// answers: no network, no credential.
var fieldScenarios = []Scenario{
	{Name: "offline_dns", Offline: true, Steps: okSteps},
	{Name: "no_api_key", NoKey: true, Steps: okSteps},
	// A stream that completes (finish_reason stop, [DONE]) without text.
	{Name: "empty_stream", Chat: func() []fp.Step {
		return []fp.Step{{Times: -1, Status: 200, Headers: map[string]string{"Content-Type": "text/event-stream"}, Body: raw(emptyChatStream)}}
	}},
	// The first request fails 503, every later one succeeds.
	{Name: "unavailable_then_ok", Steps: func(api string) []fp.Step {
		body, ok := unavailableBodies[api]
		if !ok {
			return nil
		}
		return append([]fp.Step{{Times: 1, Status: 503, Body: raw(body)}}, okSteps(api)...)
	}},
	// HTTP 529 with an overloaded body on an OpenAI-compatible endpoint.
	{Name: "overloaded_529", Chat: func() []fp.Step {
		return []fp.Step{{Times: -1, Status: 529, Body: raw(`{"error":{"message":"Overloaded","type":"overloaded_error","param":null,"code":"overloaded"}}`)}}
	}},
}

// emptyChatStream is a Chat Completions stream that finishes without text.
const emptyChatStream = `"data: {\"id\":\"chatcmpl-fake-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"fake-model\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n` +
	`data: {\"id\":\"chatcmpl-fake-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"fake-model\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":0,\"total_tokens\":12}}\n\n` +
	`data: [DONE]\n\n"`

// withoutCredentials drops every provider credential from an environment.
func withoutCredentials(env []string) []string {
	var out []string
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		if strings.HasSuffix(name, "_API_KEY") || strings.HasSuffix(name, "_AUTH_TOKEN") {
			continue
		}
		out = append(out, e)
	}
	return out
}

// okSteps answers every request (a provider the agent should never reach,
// or reaches only if it runs without the credential).
func okSteps(string) []fp.Step {
	return []fp.Step{{Times: -1, Text: "Hello! How can I help you today?"}}
}

// unavailableBodies are the 503 bodies of scenario unavailable_503.
var unavailableBodies = map[string]string{
	"openai":    `{"error":{"message":"Service Unavailable","type":"server_error","param":null,"code":null}}`,
	"anthropic": `{"type":"error","error":{"type":"api_error","message":"Service Unavailable"},"request_id":"req_fake_503"}`,
	"gemini":    `{"error":{"code":503,"message":"The service is currently unavailable.","status":"UNAVAILABLE"}}`,
}
