package policy

import "testing"

func TestSchedule(t *testing.T) {
	for _, tt := range []struct {
		name string
		cp   ClassPolicy
		want string
	}{
		{"retry and wait", ClassPolicy{Retry: Retry{true, 3, 5}, WaitForReset: WaitForReset{true, 300}, OnExhausted: OutcomeSkip},
			"retry after up to 5s, 10s, 20s, then skip; wait for a trusted reset up to 5m0s (once)"},
		{"retry only", ClassPolicy{Retry: Retry{true, 5, 30}, OnExhausted: OutcomeStop},
			"retry after up to 30s, 1m0s, 2m0s, 4m0s, 8m0s, then stop"},
		{"wait only", ClassPolicy{WaitForReset: WaitForReset{true, 604800}, OnExhausted: OutcomeStop},
			"no retry, then stop; wait for a trusted reset up to 168h0m0s (once)"},
		{"stop", ClassPolicy{OnExhausted: OutcomeStop}, "stop immediately"},
		{"skip", ClassPolicy{OnExhausted: OutcomeSkip}, "skip immediately"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Document{Version: 1, Transient: tt.cp, Hard: tt.cp}
			for _, class := range []string{"transient", "hard"} {
				if got := d.Schedule(class); got != tt.want {
					t.Errorf("Schedule(%s): got %q, want %q", class, got, tt.want)
				}
			}
		})
	}
	for _, class := range []string{"request", "unclassified", ""} {
		if got, want := Default().Schedule(class), "stop immediately (not configurable)"; got != want {
			t.Errorf("Schedule(%q): got %q, want %q", class, got, want)
		}
	}
}

func TestDescribe(t *testing.T) {
	want := "transient: retry after up to 5s, 10s, 20s, then skip; wait for a trusted reset up to 5m0s (once)\n" +
		"hard: stop immediately\n" +
		"fallback models: model-b, model-c\n" +
		"always: no retry before a provider's retry-after or reset; auth and credential failures never retried\n"
	if got := exampleDoc().Describe(); got != want {
		t.Errorf("Describe:\ngot  %q\nwant %q", got, want)
	}
	if got, want := Default().Describe(), "transient: skip immediately\nhard: skip immediately\n"; got != want {
		t.Errorf("Default().Describe: got %q, want %q", got, want)
	}
}
