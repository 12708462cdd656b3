package capture

import (
	"strings"

	fp "github.com/acp-guard/acp-guard/interop/fakeprovider"
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
}

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
