package policy

// Recovers reports whether the document, with fallback models configured
// beside it, can ever retry, wait for a reset or switch models: the
// sessions that hold prompts (and take operator actions on them) and
// share circuits.
func (d Document) Recovers(fallback []string) bool {
	for _, cp := range []ClassPolicy{d.Transient, d.Hard} {
		if cp.Retry.Enabled || cp.WaitForReset.Enabled {
			return true
		}
	}
	return len(fallback) > 0 || len(d.FallbackModels) > 0
}
