package classify

import "testing"

// TestSameProviderOnly: the codes recovered on the same provider only are
// registered transient codes (a retry of them is what recovery does), and
// a provider's own failure is not one of them.
func TestSameProviderOnly(t *testing.T) {
	for code := range sameProviderOnly {
		if !KnownCode(code) || ClassOf(code) != ClassTransient {
			t.Errorf("same-provider-only code %q: known %v, class %s; want a registered transient code", code, KnownCode(code), ClassOf(code))
		}
	}
	if !SameProviderOnly(CodeAgentTransportLost) {
		t.Error("agent_transport_lost may switch models")
	}
	if SameProviderOnly(CodeProviderOverloaded) || SameProviderOnly("no_such_code") {
		t.Error("an overloaded provider, or an unknown code, is kept to the same provider")
	}
}
