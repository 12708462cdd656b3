//go:build interop

package suite

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/acp-guard/acp-guard/dev/interop/capture"
	fp "github.com/acp-guard/acp-guard/dev/interop/fakeprovider"
)

// interopScenarios are the cases of TestInterop, in the order
// docs/INTEROP.md lists them.
var interopScenarios = []scenario{
	{name: "success", run: (*world).success},
	{name: "transient-no-policy", run: (*world).transientNoPolicy},
	{name: "reset-hint", run: (*world).resetHint},
	{name: "transient-recovers", run: (*world).transientRecovers},
	{name: "text-then-fail", run: (*world).textThenFail},
	{name: "unauthorized_401", run: func(w *world) { w.notRetried("unauthorized_401", "auth_required", "hard") }},
	{name: "context_overflow", run: func(w *world) { w.notRetried("context_overflow", "context_overflow", "request") }},
	// Quota with a short reset hint: only gemini passes one through
	// unchanged (see resetHint).
	{name: "reset-wait", applies: func(ac agentCase) bool { return ac.name == "gemini" }, run: (*world).resetWait},
	{name: "cancel-during-wait", run: (*world).cancelDuringWait},
	{name: "fallback", run: (*world).fallback},
	{name: "disconnect", run: (*world).disconnectMidTurn},
	{name: "acpx-success", run: func(w *world) { w.acpx(acpxSuccess) }},
	{name: "acpx-annotated", run: func(w *world) { w.acpx(acpxAnnotated) }},
	{name: "acpx-retried", run: func(w *world) { w.acpx(acpxRetried) }},
}

// success: the agent alone, then through acp-guard without a policy: the
// same bytes, updates and text.
func (w *world) success() {
	t := w.t
	direct := w.start("direct", true)
	base, _ := direct.turn("success", nil)
	direct.Kill()
	killMarked(direct.mark)

	plain := w.plain()
	if !bytes.Equal(plain.init.Raw, direct.init.Raw) {
		t.Errorf("initialize response differs through acp-guard:\n got %s\nwant %s", plain.init.Raw, direct.init.Raw)
	}
	got, n := plain.turn("success", nil)
	if !bytes.Equal(got.Response.Raw, base.Response.Raw) {
		t.Errorf("prompt response through acp-guard: got %s, want %s", got.Response.Raw, base.Response.Raw)
	}
	if g, b := Shape(got.Kinds()), Shape(base.Kinds()); !slices.Equal(g, b) {
		t.Errorf("update kinds through acp-guard: got %v, want %v", g, b)
	}
	if got.Text() != base.Text() || got.Text() == "" {
		t.Errorf("text through acp-guard: got %q, want %q", got.Text(), base.Text())
	}
	if n != 1 {
		t.Errorf("provider requests: got %d, want 1", n)
	}
	plain.stop(true)
}

// transientNoPolicy: a 503 outlasting the agent's own retries, no policy:
// one annotated error, nothing retried.
func (w *world) transientNoPolicy() {
	p := w.plain()
	got, n := p.turn("transient-no-policy", w.script("unavailable_503", -1))
	expectError(w.t, "transient-no-policy", got, "provider_unavailable", "transient")
	if n != w.ac.attempts {
		w.t.Errorf("provider requests (the agent's own attempts): got %d, want %d", n, w.ac.attempts)
	}
	expectNotices(w.t, "transient-no-policy", got, 0)
	p.stop(true)
}

// resetHint checks the quota / rate-limit reset hints each agent passes
// through, without a policy.
func (w *world) resetHint() {
	t := w.t
	p := w.plain()
	switch w.ac.name {
	case "gemini":
		// "Suggested retry after 3s." → retryAfterMs 3000.
		got, _ := p.turn("reset-hint", w.script("rate_limit_retry_after", -1))
		pe := expectError(t, "reset-hint", got, "rate_limited", "transient")
		if pe != nil && (pe.RetryAfterMs == nil || *pe.RetryAfterMs != 3000) {
			t.Errorf("retryAfterMs: got %v, want 3000", pe.RetryAfterMs)
		}
	case "claude":
		// The usage-limit text carries the reset date; it survives in the
		// message and becomes resetAt.
		reset := time.Now().UTC().Add(48 * time.Hour).Truncate(time.Minute)
		body := fmt.Sprintf(`{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your specified workspace API usage limits. You will regain access on %s at %s UTC."},"request_id":"req_fake_quota"}`,
			reset.Format("2006-01-02"), reset.Format("15:04"))
		got, n := p.turn("reset-hint", fp.Script{capture.MainKey(w.agent.API): {fp.Fail(-1, 429, body)}})
		pe := expectError(t, "reset-hint", got, "quota_limited", "hard")
		if want := reset.Format(time.RFC3339); pe != nil && (pe.ResetAt == nil || !sameInstant(*pe.ResetAt, want)) {
			t.Errorf("resetAt: got %v, want %s", pe.ResetAt, want)
		}
		t.Logf("reset-hint: %d requests", n)
	case "codex":
		got, n := p.turn("reset-hint", w.script("rate_limit_retry_after", -1))
		pe := expectError(t, "reset-hint", got, "rate_limited", "transient")
		w.expectBug(bugDrops429Body, pe != nil && pe.RetryAfterMs == nil && pe.ResetAt == nil && n == 1,
			fmt.Sprintf("retryAfterMs %v, resetAt %v, provider requests %d (want no hint and 1 request)", ptrString(pe, true), ptrString(pe, false), n))
	}
	p.stop(true)
}

func ptrString(pe *providerErr, retry bool) string {
	switch {
	case pe == nil:
		return "(no providerError)"
	case retry && pe.RetryAfterMs != nil:
		return fmt.Sprint(*pe.RetryAfterMs)
	case !retry && pe.ResetAt != nil:
		return *pe.ResetAt
	}
	return "null"
}

func sameInstant(a, b string) bool {
	ta, err1 := time.Parse(time.RFC3339, a)
	tb, err2 := time.Parse(time.RFC3339, b)
	return err1 == nil && err2 == nil && ta.Equal(tb)
}

// transientRecovers: a 503 for the agent's attempts, then success: one
// retry notice, and the retry's answer.
func (w *world) transientRecovers() {
	t, ac := w.t, w.ac
	p := w.guarded()
	got, n := p.turn("transient-recovers", w.script("unavailable_503", ac.attempts))
	if ac.staleAfterError {
		w.expectStale("transient-recovers", got)
		// The retry's provider request happens after the stale answer.
		w.waitRequests(ac.attempts + 1)
	} else {
		if got.StopReason() != "end_turn" || got.Text() == "" {
			t.Errorf("got %s text %q, want end_turn with text", got.Response.Raw, got.Text())
		}
		if n != ac.attempts+1 {
			t.Errorf("provider requests: got %d, want %d (agent) + 1 (acp-guard)", n, ac.attempts)
		}
	}
	if ns := expectNotices(t, "transient-recovers", got, 1); len(ns) == 1 {
		expectRetryNotice(w, "transient-recovers", ns[0])
	}
	p.stop(true)
}

// expectRetryNotice checks the notice of the suite policy's one retry of a
// 503: its delay is a full-jitter draw from at most the policy's 2 s
// (with circuits on, at least their 1 s least cooldown).
func expectRetryNotice(w *world, name string, n Notice) {
	w.t.Helper()
	if n.Action != "retry" || n.Class != "transient" || n.Code != "provider_unavailable" || n.Attempt != 1 || n.MaxRetries != 1 ||
		n.DelayMs <= 0 || n.DelayMs > 2000 || n.Deadline == "" {
		w.t.Errorf("%s: notice: got %+v, want retry 1/1 within 2000 ms with a deadline, provider_unavailable/transient", name, n)
	}
}

// textThenFail: text streamed, then a failure: never retried.
func (w *world) textThenFail() {
	t, ac := w.t, w.ac
	p := w.guarded()
	got, _ := p.turn("text-then-fail", w.script(ac.textFail, -1))
	expectNotices(t, "text-then-fail", got, 0)
	if ac.textFailSurfaces {
		pe := expectError(t, "text-then-fail", got, ac.textFailCode, "transient")
		if pe != nil && (pe.ReplaySafe || !pe.Evidence.AssistantOutput) {
			t.Errorf("replaySafe %v, assistantOutput %v; want false, true", pe.ReplaySafe, pe.Evidence.AssistantOutput)
		}
	} else {
		w.expectBug(bugSwallowsStreamFailure, got.StopReason() == "end_turn" && got.Err() == nil,
			fmt.Sprintf("got %s, want the agent's silent end_turn (if it reports the failure now, set textFailSurfaces)", got.Response.Raw))
	}
	if got.Text() == "" {
		t.Errorf("the client saw no text")
	}
	p.stop(true)
}

// notRetried: a hard or request-class failure is annotated and stopped.
func (w *world) notRetried(scenario, code, class string) {
	p := w.guarded()
	got, _ := p.turn(scenario, w.script(scenario, -1))
	if pe := expectError(w.t, scenario, got, code, class); pe != nil && pe.Recovery.Action != "stop" {
		w.t.Errorf("recovery: got %+v, want stop", pe.Recovery)
	}
	expectNotices(w.t, scenario, got, 0)
	p.stop(true)
}

// resetWait: a 429 with a 3 s reset hint for the agent's attempts, then
// success: acp-guard waits for the reset, then the answer.
func (w *world) resetWait() {
	t, ac := w.t, w.ac
	p := w.guarded()
	got, n := p.turn("reset-wait", w.script("rate_limit_retry_after", ac.attempts))
	if got.StopReason() != "end_turn" || got.Text() == "" {
		t.Errorf("got %s, want end_turn with text", got.Response.Raw)
	}
	if n != ac.attempts+1 {
		t.Errorf("provider requests: got %d, want %d + 1", n, ac.attempts)
	}
	if ns := expectNotices(t, "reset-wait", got, 1); len(ns) == 1 && (ns[0].Action != "wait_for_reset" || ns[0].DelayMs != 3000 || ns[0].Code != "rate_limited") {
		t.Errorf("notice: got %+v, want wait_for_reset 3000 ms rate_limited", ns[0])
	}
	p.stop(true)
}

// cancelWaitPolicy retries after up to 6 s; with --jitter-seed
// cancelWaitSeed its first draw is 5.97 s (policy.NewJitter), a wide
// window for the client's cancel even on a busy machine. The scenario
// reads the delay from the notice, so a different draw only narrows it.
const (
	cancelWaitInterval = 6
	cancelWaitSeed     = "3"
)

// cancelDuringWait fails the provider for good, cancels as soon as the
// retry notice arrives, and checks one cancelled answer and no retry.
func (w *world) cancelDuringWait() {
	t := w.t
	pol := filepath.Join(w.base, "cancel-policy.json")
	doc := strings.Replace(fmt.Sprintf(suitePolicy, w.ac.fallback), `"initial_interval_seconds":2`, fmt.Sprintf(`"initial_interval_seconds":%d`, cancelWaitInterval), 1)
	if err := os.WriteFile(pol, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	p := w.start("policy", false, "--policy", pol, "--jitter-seed", cancelWaitSeed)
	w.setScript(w.script("unavailable_503", -1))
	sid, _, err := p.NewSession(w.ctx, p.cwd)
	if err != nil {
		w.fatalf("session/new: %v", err)
	}
	pend, err := p.StartPrompt(sid, "Say hello")
	if err != nil {
		t.Fatal(err)
	}
	notice, _, err := p.WaitFor(w.ctx, pend.Mark, IsRetryNotice)
	if err != nil {
		w.fatalf("no retry notice: %v", err)
	}
	if err := p.Cancel(sid); err != nil {
		t.Fatal(err)
	}
	got, err := p.Finish(w.ctx, pend)
	if err != nil {
		w.fatalf("the cancelled prompt: %v", err)
	}
	if got.StopReason() != "cancelled" || got.Responses != 1 {
		t.Errorf("got %s (%d responses), want one cancelled answer", got.Response.Raw, got.Responses)
	}
	// No retry may go out, even after the notice's deadline. Proving an
	// absence takes time: wait a second past the deadline the notice gave.
	n, _ := noticeOf(notice)
	if dl, err := time.Parse(time.RFC3339, n.Deadline); err == nil {
		time.Sleep(time.Until(dl) + time.Second)
	} else {
		time.Sleep(time.Duration(n.DelayMs)*time.Millisecond + time.Second)
	}
	if c := w.chatRequests(); c != w.ac.attempts {
		t.Errorf("provider requests: got %d, want %d (no acp-guard retry)", c, w.ac.attempts)
	}
	t.Logf("cancel-during-wait: %s", got.Response.Raw)
	// The session still works.
	w.setScript(nil)
	after, err := p.Prompt(w.ctx, sid, "Say hello")
	if err != nil {
		w.fatalf("next prompt: %v", err)
	}
	if after.StopReason() != "end_turn" || (after.Text() == "") != w.ac.staleAfterError {
		t.Errorf("next prompt: got %s text %q, want end_turn (empty: %v)", after.Response.Raw, after.Text(), w.ac.staleAfterError)
	}
	p.stop(true)
}

// fallbackStall is the stall watchdog of the fallback scenario: it turns
// codex's intermittently lost prompt (bugPromptLostAfterSwitch) into an
// agent_stalled answer instead of a wait for the scenario's budget. An
// agent busy answering is never quiet for this long.
const fallbackStall = "30s"

// fallback: the first model keeps failing; after the retry on it acp-guard
// switches the model (a second notice says so) and the answer comes from
// the fallback model.
func (w *world) fallback() {
	t, ac := w.t, w.ac
	main := capture.MainKey(w.agent.API)
	p := w.start("policy", false, "--policy", w.policy, "--stall-timeout", fallbackStall)
	fail := w.script("unavailable_503", -1)[main]
	got, _ := p.turn("fallback", fp.Script{
		main + "@" + ac.model: fail,
		main:                  {{Times: -1, Text: fallbackText}},
	})
	if ac.staleAfterError {
		// acp-guard's retry on the first model gets the stale empty
		// end_turn, so the fallback is never reached.
		w.expectStale("fallback", got)
		if ns := expectNotices(t, "fallback", got, 1); len(ns) == 1 {
			expectRetryNotice(w, "fallback", ns[0])
		}
		p.stop(true)
		return
	}
	lost := false
	if pe := got.ProviderError(); ac.losesPromptAfterSwitch && pe != nil && pe.Recovery.Reason == "agent_stalled" {
		lost = strings.Contains(p.stderr.String(), "Received event for unknown submission ID")
		w.expectBug(bugPromptLostAfterSwitch, lost, fmt.Sprintf("the prompt after the switch stalled (%s) without the bug's log line", got.Response.Raw))
	} else {
		if got.StopReason() != "end_turn" || got.Text() != fallbackText {
			t.Errorf("got %s text %q, want end_turn with %q", got.Response.Raw, got.Text(), fallbackText)
		}
		if m := got.Model(); m != ac.fallback {
			t.Errorf("result _meta.acpGuard.model: got %q, want %q (%s)", m, ac.fallback, got.Response.Raw)
		}
	}
	var failed, other int
	for _, r := range w.fp.Stats().Requests {
		if r.Route != main {
			continue
		}
		if r.Model == ac.model {
			failed++
		} else if r.Status == 200 {
			other++
		}
	}
	if failed != 2*ac.attempts || (other == 0 && !lost) {
		t.Errorf("requests to %s: got %d, want %d (agent × (1 + acp-guard retry)); successful requests to another model: %d, want > 0",
			ac.model, failed, 2*ac.attempts, other)
	}
	// Two notices: the retry on the first model, then the switch.
	if ns := expectNotices(t, "fallback", got, 2); len(ns) == 2 {
		expectRetryNotice(w, "fallback", ns[0])
		if s := ns[1]; s.Action != "switch" || s.Model != ac.fallback || s.Code != "provider_unavailable" || s.Class != "transient" {
			t.Errorf("second notice: got %+v, want switch to %s for provider_unavailable/transient", s, ac.fallback)
		}
	}
	p.stop(true)
}

// disconnectMidTurn stalls the provider, closes the client's stdin while
// the turn runs, and checks that acp-guard exits and the agent is gone.
func (w *world) disconnectMidTurn() {
	p := w.guarded()
	w.setScript(fp.Script{capture.MainKey(w.agent.API): {{Times: -1, Delay: fp.Duration(10 * time.Minute)}}})
	sid, _, err := p.NewSession(w.ctx, p.cwd)
	if err != nil {
		w.fatalf("session/new: %v", err)
	}
	if _, err := p.StartPrompt(sid, "Say hello"); err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.fp.WaitCount(w.ctx, capture.MainKey(w.agent.API), 1); err != nil {
		w.fatalf("the provider never saw the turn: %v", err)
	}
	p.stop(true)
}
