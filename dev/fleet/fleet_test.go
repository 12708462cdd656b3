package fleet

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/demoagent"
	"github.com/acp-guard/acp-guard/internal/testbin"
)

// The fleet check at a small N, in the normal test suite: real acp-guard
// processes and demo agents over real pipes, a real NATS server and the
// file store. Every phase ends on a condition of what happened (attempts
// the agents logged, the proxies' log lines), never after a time, and
// every check is an order or a count, so the tests pass on a busy machine.
// `make fleet` runs the large N.

func TestMain(m *testing.M) { testbin.Main(m) }

func TestEnvironmentNamesAreDemoagents(t *testing.T) {
	if envOutage != demoagent.EnvOutageFile || envAttempts != demoagent.EnvAttemptsFile {
		t.Fatalf("fleet's outage environment (%s, %s) differs from demoagent's (%s, %s)",
			envOutage, envAttempts, demoagent.EnvOutageFile, demoagent.EnvAttemptsFile)
	}
}

// counts returns the sessions' own failed prompts and the failed retries.
func counts(as []Attempt) (own, retries int) {
	for _, a := range as {
		switch {
		case a.Failed && a.N == 1:
			own++
		case a.Failed:
			retries++
		}
	}
	return
}

func small(t *testing.T, store string) Config {
	return Config{Bin: testbin.Path(t), N: 4, Store: store, Retries: 6, Initial: 1, Dir: t.TempDir(),
		Timeout: 3 * time.Minute} // hang guard
}

func runFleet(t *testing.T, cfg Config) *Result {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d sessions via %s: answers %v, %d + %d attempts during the outage, retries per window %v, %d probes, circuits %v",
		res.N, res.Store, res.Answers, res.OwnInOutage, res.RetriesInOutage, res.Windows, res.Probes, res.Circuits)
	if res.Answers["ok"] != res.N || res.Extra != 0 {
		t.Errorf("answers %v and %d extra, want %d end_turn, each exactly once", res.Answers, res.Extra, res.N)
	}
	for _, s := range res.Circuits {
		if s != "closed" {
			t.Errorf("circuit %s at the end, want closed", s)
		}
	}
	return res
}

// oneProbeAtATime: during the outage every retry that failed was the
// circuit's one probe: failed retries never overlap another retry, and
// the next starts at least the least cooldown (one second) after a failed
// one ended. Lower bounds only: load stretches the gaps, never shrinks
// them.
func oneProbeAtATime(t *testing.T, as []Attempt) {
	t.Helper()
	var retries []Attempt
	for _, a := range as {
		if a.N > 1 {
			retries = append(retries, a)
		}
	}
	slices.SortFunc(retries, func(a, b Attempt) int { return a.Start.Compare(b.Start) })
	for i := 0; i+1 < len(retries); i++ {
		if a, next := retries[i], retries[i+1]; a.Failed && next.Start.Sub(a.End) < time.Second {
			t.Errorf("retry %d/%d started %v after the failed retry %d/%d ended: two probes in one cooldown",
				next.PID, next.N, next.Start.Sub(a.End), a.PID, a.N)
		}
	}
}

// The outage lasts until every session's own prompt and two retries
// failed: all sessions recover, one probe at a time, and no proxy ever
// falls back to its own schedule.
func TestFleetSharesOneCircuit(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"nats", "file"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			cfg := small(t, store)
			var seen []Attempt
			cfg.Outage = func(s *State) bool {
				seen = s.Attempts
				own, retries := counts(s.Attempts)
				return own == cfg.N && retries >= 2
			}
			res := runFleet(t, cfg)
			oneProbeAtATime(t, seen)
			if res.Unavailable != 0 || res.Probes < 3 {
				t.Errorf("%d proxies saw the store unavailable, %d probes; want 0 and at least 3 (two failed, one succeeded)", res.Unavailable, res.Probes)
			}
		})
	}
}

// The NATS server is killed once the circuit is open and a probe failed,
// and started again once a proxy found it gone (that proxy fell back to
// its own schedule, as it must); the outage ends once a proxy's store
// answered again. Every session is answered once with success, nothing
// fell back before the kill, and the circuit the restarted server kept is
// closed by the recovery.
func TestFleetStoreRestart(t *testing.T) {
	t.Parallel()
	cfg := small(t, "nats")
	cfg.StoreDown = func(s *State) bool {
		own, retries := counts(s.Attempts)
		return own == cfg.N && retries >= 1
	}
	cfg.StoreUp = func(s *State) bool { return hasLog(s, "unavailable") }
	cfg.Outage = func(s *State) bool { return hasLog(s, "recovered") }
	res := runFleet(t, cfg)
	if res.Unavailable == 0 || res.Resumers == 0 || res.UnavailableBeforeKill != 0 {
		t.Errorf("%d proxies saw the store down (%d before it was killed), %d saw it again; want some, none, some",
			res.Unavailable, res.UnavailableBeforeKill, res.Resumers)
	}
}

func hasLog(s *State, kind string) bool {
	return slices.ContainsFunc(s.Logs, func(e LogEvent) bool { return e.Kind == kind })
}
