package suite

// isSubsequence reports whether sub appears in seq in order (not
// necessarily adjacent).
func isSubsequence(sub, seq []string) bool {
	i := 0
	for _, s := range seq {
		if i < len(sub) && s == sub[i] {
			i++
		}
	}
	return i == len(sub)
}

// asyncKinds are session updates an agent sends on its own schedule (after
// session/new, or whenever usage changes), so whether one lands inside a
// turn depends on timing, not on the relay.
var asyncKinds = map[string]bool{
	"available_commands_update": true,
	"current_mode_update":       true,
	"config_option_update":      true,
	"session_info_update":       true,
	"usage_update":              true,
}

// Shape reduces a turn's update kinds to what is comparable between runs:
// asynchronous kinds dropped, runs of the same kind collapsed to one.
func Shape(kinds []string) []string {
	var out []string
	for _, k := range kinds {
		if asyncKinds[k] {
			continue
		}
		if len(out) > 0 && out[len(out)-1] == k {
			continue
		}
		out = append(out, k)
	}
	return out
}
