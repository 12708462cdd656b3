package acpschema_test

import (
	"github.com/acp-guard/acp-guard/internal/acptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/policy"
)

// Operator actions on the wire (guard/operator.go): the initialize result
// advertising the extension (_meta.acpGuard.recovery), the notice of an
// action, the _acp-guard/recovery answers — the resulting state, and each
// error — and the warning notice for a fallback model the agent did not
// offer, all valid ACP.
func TestSchemaOperatorActions(t *testing.T) {
	t.Parallel()
	schemaOrSkip(t)
	retryLater := policyFile(t, 3, 30, false, "stop")
	for _, action := range []string{"retry_now", "stop", "skip"} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			// The seed's first draw from 30 s is long enough: the retry
			// is still held when the request comes.
			s := proxy(t, []string{"--policy", retryLater, "--fallback-models", "model-x", "--jitter-seed", slowSeed(30 * time.Second)},
				"--scenario", "fail-then-succeed", "--fail", "1", "--error", "overloaded", "--agent-name", "codex-acp")
			sid := s.open()
			s.send(8, "_acp-guard/recovery", `{"sessionId":"`+sid+`","action":"stop"}`) // nothing held yet
			if f := s.until(answerTo("8")); !strings.Contains(string(f.Raw), `"not_held"`) {
				t.Fatalf("want not_held, got %s", f.Raw)
			}
			s.prompt(3, sid)
			s.until(func(f acptest.Frame) bool {
				return f.Method == "session/update" && strings.Contains(string(f.Raw), "retrying in")
			})
			s.send(9, "_acp-guard/recovery", `{"sessionId":"`+sid+`","action":"`+action+`"}`)
			if action == "skip" { // model-x is not offered: nothing to switch to
				if f := s.until(answerTo("9")); !strings.Contains(string(f.Raw), `"not_allowed"`) {
					t.Fatalf("skip: want not_allowed, got %s", f.Raw)
				}
				s.send(10, "_acp-guard/recovery", `{"sessionId":"`+sid+`","action":"later"}`)
				s.until(answerTo("10"))
				s.send(11, "_acp-guard/recovery", `{"sessionId":"`+sid+`","action":"stop"}`)
			}
			// The prompt's answer and the request's, in either order.
			seen := map[string]bool{}
			s.until(func(f acptest.Frame) bool {
				if f.Method == "" {
					seen[string(f.ID)] = true
				}
				return seen["3"] && (seen["9"] || seen["11"])
			})
			s.finish()
			conform(t, s, counts{toClient: 4, toAgent: 0})
		})
	}
}

// slowSeed is a --jitter-seed whose first full-jitter draw from backoff is
// at least five sixths of it.
func slowSeed(backoff time.Duration) string {
	for seed := uint64(1); ; seed++ {
		if policy.NewJitter(seed)(backoff) >= backoff*5/6 {
			return strconv.FormatUint(seed, 10)
		}
	}
}
