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

// Unconfigured reports whether the document, with fallback models
// configured beside it, sets no recovery at all: no retry, no reset wait,
// no per-code override, no fallback model and no compaction — what
// acp-guard runs with when it has no policy (Default, or a document that
// says nothing more). Its detection settings (empty_turn,
// stall_timeout_seconds) do not count: they find failures, they do not
// recover them. A failure the default would skip (there is no model to
// skip to) is then stopped for want of a policy: recovery.reason
// "no_policy".
func (d Document) Unconfigured(fallback []string) bool {
	def := Default()
	return d.Transient == def.Transient && d.Hard == def.Hard && len(d.Codes) == 0 &&
		len(d.FallbackModels) == 0 && len(fallback) == 0 && !d.Request.CompactThenRetry
}
