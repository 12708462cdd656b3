package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/held"
	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/natstest"
	"github.com/acp-guard/acp-guard/policy"
)

// heldWatchdog bounds how long a test waits for a condition that must
// come (a hang guard, not a timing assertion).
const heldWatchdog = 45 * time.Second

// heldStore is where the proxies and the operator meet: the state
// directory's file store, or a NATS server (in this test process).
type heldStore struct {
	name  string
	flags []string // for the proxy and for `acp-guard held`
	state string
	url   string
}

func fileStore(t *testing.T) heldStore {
	state := filepath.Join(t.TempDir(), "state")
	return heldStore{name: "file", flags: []string{"--state-dir", state}, state: state}
}

func natsStore(t *testing.T) heldStore {
	t.Helper()
	url := natstest.Start(t).URL()
	state := filepath.Join(t.TempDir(), "state") // the attempt log's
	return heldStore{name: "nats", flags: []string{"--circuits", url, "--state-dir", state}, state: state, url: url}
}

// operatorPolicy retries transient failures up to 10 times, the first
// after first seconds; waits up to 2 h for a hard failure's reset; then
// skips to the fallback models.
func operatorPolicy(t *testing.T, first int) string {
	return acptest.WriteFile(t, "policy.json", fmt.Sprintf(`{"version":1,
"transient":{"retry":{"enabled":true,"max_retries":10,"initial_interval_seconds":%d},"on_exhausted":"skip"},
"hard":{"wait_for_reset":{"enabled":true,"max_wait_seconds":7200},"on_exhausted":"stop"}}`, first))
}

// heldEntries runs `acp-guard held --json` as an operator would, in a
// process of its own.
func heldEntries(t *testing.T, st heldStore) []held.Entry {
	t.Helper()
	out, stderr, code := runBin(t, nil, "", append([]string{"held", "--json"}, st.flags...)...)
	if code != 0 {
		t.Fatalf("acp-guard held: exit %d: %s", code, stderr)
	}
	var list []held.Entry
	for _, ln := range strings.Split(strings.TrimSpace(out), "\n") {
		if ln == "" {
			continue
		}
		var e held.Entry
		if err := json.Unmarshal([]byte(ln), &e); err != nil {
			t.Fatalf("held --json line %q: %v", ln, err)
		}
		list = append(list, e)
	}
	return list
}

// awaitHeld lists until session's prompt is held in state (a condition:
// publication follows the hold by held.PublishAfter).
func awaitHeld(t *testing.T, st heldStore, session, state string) held.Entry {
	t.Helper()
	deadline := time.Now().Add(heldWatchdog)
	for time.Now().Before(deadline) {
		for _, e := range heldEntries(t, st) {
			if e.SessionID == session && e.State == state {
				return e
			}
		}
	}
	t.Fatalf("session %s never listed in state %s", session, state)
	return held.Entry{}
}

// An operator, from a second process, lists a held prompt and moves it on
// with each action, through the file store and through NATS; the client
// sees the action's notice and the prompt's one answer, the attempt log
// records who asked, and the prompt leaves the list.
func TestE2EHeldOperator(t *testing.T) {
	t.Parallel()
	for _, store := range []func(*testing.T) heldStore{fileStore, natsStore} {
		for _, tt := range []struct {
			action, state string
			agent         []string
			parked        bool   // a circuit is open: the prompt parks behind it
			answer        string // what the client's prompt gets: "result", or the error's code
			to            string
		}{
			{action: "retry-now", state: "retry_wait", agent: []string{"--scenario", "fail-then-succeed", "--fail", "1", "--error", "overloaded"}, answer: "result", to: "retrying"},
			{action: "skip", state: "retry_wait", agent: []string{"--scenario", "fail-model", "--bad-model", "model-a", "--error", "overloaded"}, answer: "result", to: "switching"},
			{action: "stop", state: "waiting_for_reset", agent: []string{"--scenario", "quota-reset", "--reset-in", "1h"}, answer: "quota_limited", to: "action_required"},
			{action: "retry-now", state: "parked", parked: true, agent: []string{"--scenario", "fail-then-succeed", "--fail", "1", "--error", "overloaded"}, answer: "result", to: "retrying"},
		} {
			st := store(t)
			t.Run(st.name+"/"+tt.state+"/"+tt.action, func(t *testing.T) {
				t.Parallel()
				first := 3600
				if tt.parked {
					first = 1
					openCircuit(t, st)
				}
				flags := append([]string{"--policy", operatorPolicy(t, first), "--fallback-models", "model-b", "--log-level", "info",
					"--jitter-seed", slowSeed(time.Duration(first) * time.Second)}, st.flags...)
				p := startBin(t, nil, proxy(t, flags, append(tt.agent, "--agent-name", "codex-acp")...)...)
				p.Send(acptest.Initialize(1), acptest.SessionNew(2))
				p.Until("1")
				sid := sessionID(t, p.Until("2"))
				p.Send(acptest.Prompt(3, sid))
				e := awaitHeld(t, st, sid, tt.state)
				if e.RequestID != "3" || e.Agent != "codex-acp" || e.Code == "" || e.Since.IsZero() || e.Host == "" || e.PID == 0 {
					t.Errorf("listed %+v", e)
				}
				if tt.state != "parked" && (e.Next == nil || time.Until(*e.Next) < 30*time.Minute) {
					t.Errorf("next attempt %v, want about an hour ahead", e.Next)
				}
				table, _, _ := runBin(t, nil, "", append([]string{"held"}, st.flags...)...)
				if !strings.Contains(table, sid) || !strings.Contains(table, tt.state) || !strings.Contains(table, "NEXT ATTEMPT") {
					t.Errorf("held table lacks the prompt:\n%s", table)
				}
				asked := time.Now()
				out, stderr, code := runBin(t, nil, "", append([]string{"held", tt.action, sid}, st.flags...)...)
				if code != 0 || !strings.Contains(out, tt.state+" → "+tt.to) {
					t.Fatalf("held %s: exit %d, stdout %q, stderr %q; want %s → %s", tt.action, code, out, stderr, tt.state, tt.to)
				}
				t.Logf("acp-guard held %s: answered in %s (the whole command)", tt.action, time.Since(asked).Round(time.Millisecond))
				frames := p.Until("3")
				checkOperatorAnswer(t, frames, tt.answer)
				for _, e := range heldEntries(t, st) {
					if e.SessionID == sid {
						t.Errorf("still listed after %s: %+v", tt.action, e)
					}
				}
				if _, code := p.Finish(); code != 0 {
					t.Errorf("proxy exit %d: %s", code, p.Stderr.Tail(2000))
				}
				if !hasOperatorRecord(t, st.state) {
					t.Errorf("the attempt log has no record by the operator")
				}
			})
		}
	}
}

// checkOperatorAnswer checks that the client was told an operator acted,
// and that its prompt got the answer want ("result" or an error code).
func checkOperatorAnswer(t *testing.T, frames []acptest.Frame, want string) {
	t.Helper()
	noticed := false
	for _, f := range frames {
		if f.Method == "session/update" && strings.Contains(string(f.Raw), `"by":"operator"`) {
			noticed = true
		}
	}
	if !noticed {
		t.Errorf("no notice of the operator's action")
	}
	last := frames[len(frames)-1]
	switch {
	case want == "result" && last.Error != nil:
		t.Errorf("prompt answered %s, want a result", last.Raw)
	case want != "result" && (last.Error == nil || !strings.Contains(string(last.Raw), `"code":"`+want+`"`) ||
		!strings.Contains(string(last.Raw), `"reason":"stop_now"`) || !strings.Contains(string(last.Raw), `"by":"operator"`)):
		t.Errorf("prompt answered %s, want %s stopped (stop_now) by the operator", last.Raw, want)
	}
}

func hasOperatorRecord(t *testing.T, state string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, policy.LogFileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, ln := range strings.Split(string(b), "\n") {
		var r policy.Record
		if json.Unmarshal([]byte(ln), &r) == nil && r.By == "operator" && strings.HasSuffix(r.Decision.Reason, "_now") {
			return true
		}
	}
	return false
}

// slowSeed is a jitter seed (--jitter-seed) whose first full-jitter draw
// from backoff is at least five sixths of it: a retry scheduled an hour
// ahead stays held while the test acts on it.
func slowSeed(backoff time.Duration) string {
	for seed := uint64(1); ; seed++ {
		if policy.NewJitter(seed)(backoff) >= backoff*5/6 {
			return strconv.FormatUint(seed, 10)
		}
	}
}

func sessionID(t *testing.T, frames []acptest.Frame) string {
	t.Helper()
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(frames[len(frames)-1].Result, &r); err != nil || r.SessionID == "" {
		t.Fatalf("session/new answered %s", frames[len(frames)-1].Raw)
	}
	return r.SessionID
}

// openCircuit opens the circuit the demo agent's overloaded failures fall
// on (codex-acp, model-a, scope provider) for ten minutes, as another
// session's failure would have: a retry due then parks behind it (its own
// schedule has 17 minutes left to wait).
func openCircuit(t *testing.T, st heldStore) {
	t.Helper()
	var cs circuit.Store
	var err error
	if st.url != "" {
		cs, err = circuit.OpenStore(st.url, circuit.Options{})
	} else {
		cs, err = circuit.OpenStore("file", circuit.Options{Dir: st.state})
	}
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	key, err := circuit.Key{Provider: "codex-acp", Model: "model-a", Scope: "provider"}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	rec := circuit.Record{Key: key, OpenUntil: now.Add(10 * time.Minute), OpenedAt: now, Code: "provider_overloaded", Class: "transient",
		Failures: 1, CooldownMs: (10 * time.Minute).Milliseconds(), Epoch: 1, UpdatedAt: now}
	if err := cs.CompareAndSwap(context.Background(), key.ID(), rec, 0); err != nil {
		t.Fatal(err)
	}
}
