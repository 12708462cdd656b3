//go:build interop

package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/internal/syncio"
	"github.com/acp-guard/acp-guard/internal/testbin"
	"github.com/acp-guard/acp-guard/interop/capture"
	fp "github.com/acp-guard/acp-guard/interop/fakeprovider"
)

// The real-agent interop suite. See docs/INTEROP.md for what each scenario
// proves. Environment:
//
//	ACP_GUARD_CACHE        install folder of interop/install.sh (default $HOME/.cache/acp-guard-interop)
//	ACP_GUARD_INTEROP_OUT  keep transcripts (acp-guard --record) and provider stats here
//	ACP_GUARD_INTEROP_AGENTS  comma-separated subset of codex,claude,gemini

// fallbackText is what the fake provider answers for any model but the
// failing one in the fallback scenario.
const fallbackText = "Answer from the fallback model."

// agentCase is what the suite needs to know about one agent.
type agentCase struct {
	name     string
	retries  int    // agent-internal retries configured for the suite
	attempts int    // provider requests the agent makes per turn for a 503 with those retries
	model    string // the model the agent asks for by default
	fallback string // the model id acp-guard switches to (session/set_model or config option value)
	// textFail is the capture scenario used for "text streamed then a
	// failure"; textFailSurfaces says whether the agent reports it at all.
	textFail         string
	textFailSurfaces bool
	// staleAfterError: after a failed prompt, the agent answers the next
	// prompt of the same session at once with an empty end_turn (a stale
	// result) and delivers the real answer one turn late
	// (docs/real-agent-errors.md, "claude: stale turn after an error").
	// Every same-session re-prompt — acp-guard's retry and fallback
	// included — then yields an empty end_turn; the suite asserts that
	// shape so a fixed agent makes the case fail and be updated.
	staleAfterError bool
}

var agentCases = []agentCase{
	{name: "codex", retries: 1, attempts: 4, model: "gpt-5.4", fallback: "gpt-5.4-mini",
		textFail: "text_then_error", textFailSurfaces: true},
	{name: "claude", retries: 1, attempts: 2, model: "claude-sonnet-4-6", fallback: "haiku",
		textFail: "drop_after_text", textFailSurfaces: false, staleAfterError: true},
	{name: "gemini", retries: 1, attempts: 2, model: "gemini-2.5-flash", fallback: "gemini-2.5-pro",
		textFail: "drop_after_text", textFailSurfaces: true},
}

// suitePolicy: transient failures are retried once after 2 s (long enough
// for a client to cancel during the wait), reset hints are waited for up to
// 30 s, and an exhausted transient failure skips to the fallback model.
const suitePolicy = `{"version":1,
 "transient":{"retry":{"enabled":true,"max_retries":1,"initial_interval_seconds":2},
              "wait_for_reset":{"enabled":true,"max_wait_seconds":30},"on_exhausted":"skip"},
 "hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},
         "wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"},
 "fallback_models":[%q]}`

func cacheDir(t *testing.T) string {
	c := os.Getenv("ACP_GUARD_CACHE")
	if c == "" {
		home, _ := os.UserHomeDir()
		c = filepath.Join(home, ".cache", "acp-guard-interop")
	}
	if _, err := os.Stat(filepath.Join(c, "node_modules")); err != nil {
		t.Fatalf("agents not installed in %s (run make interop-deps): %v", c, err)
	}
	return c
}

func TestInterop(t *testing.T) {
	cache := cacheDir(t)
	bin := testbin.Path(t)
	only := os.Getenv("ACP_GUARD_INTEROP_AGENTS")
	for _, ac := range agentCases {
		if only != "" && !slices.Contains(strings.Split(only, ","), ac.name) {
			continue
		}
		t.Run(ac.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, ac, cache, bin)
			w.run()
		})
	}
}

// world is one agent's part of the suite: a fake provider, a scratch
// folder, and the processes started against them one after another.
type world struct {
	t       *testing.T
	ac      agentCase
	agent   capture.Agent
	cache   string
	bin     string
	base    string // scratch folder (under the cache: codex refuses /tmp)
	out     string // where transcripts are kept ("" : base)
	fp      *fp.Server
	fplog   *syncio.Buffer
	policy  string
	started int
	ctx     context.Context
}

var worldSeq atomic.Int64

func newWorld(t *testing.T, ac agentCase, cache, bin string) *world {
	agent, ok := capture.Agents()[ac.name]
	if !ok {
		t.Fatalf("unknown agent %s", ac.name)
	}
	tmp := filepath.Join(cache, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp(tmp, "interop-"+ac.name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	w := &world{t: t, ac: ac, agent: agent, cache: cache, bin: bin, base: base, fplog: &syncio.Buffer{}}
	w.out = base
	if o := os.Getenv("ACP_GUARD_INTEROP_OUT"); o != "" {
		w.out = filepath.Join(o, ac.name)
		if err := os.MkdirAll(w.out, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := fp.Start(nil, w.fplog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	w.fp = srv
	w.policy = filepath.Join(base, "policy.json")
	if err := os.WriteFile(w.policy, []byte(fmt.Sprintf(suitePolicy, ac.fallback)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	w.ctx = ctx
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("fake provider log:\n%s", w.fplog.String())
		}
	})
	return w
}

// proc is one started client: either the agent alone or acp-guard with the
// agent behind it.
type proc struct {
	*Client
	w      *world
	label  string
	mark   string // environment marker of every process it started
	cwd    string
	home   string
	env    []string
	argv   []string // the agent command
	init   Frame
	stderr *syncio.Buffer
}

// launch prepares a home for the agent and returns its command and
// environment.
func (w *world) launch(label string) (dir string, argv, env []string, auth string) {
	t := w.t
	w.started++
	dir = filepath.Join(w.base, fmt.Sprintf("%02d-%s", w.started, label))
	home, cwd := filepath.Join(dir, "home"), filepath.Join(dir, "work")
	for _, d := range []string{home, cwd, filepath.Join(dir, "tmp"), filepath.Join(dir, "state")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l, err := w.agent.Setup(w.cache, home, w.fp.URL, capture.Tune{Retries: w.ac.retries})
	if err != nil {
		t.Fatal(err)
	}
	mark := fmt.Sprintf("%s-%s-%d-%d", w.ac.name, label, os.Getpid(), worldSeq.Add(1))
	env = append(l.Env, "TMPDIR="+filepath.Join(dir, "tmp"), "ACP_GUARD_INTEROP_MARK="+mark)
	return dir, l.Argv, env, l.AuthMethod
}

// start starts the agent, through acp-guard with guardArgs unless direct,
// and runs initialize (and authenticate when the agent needs it).
func (w *world) start(label string, direct bool, guardArgs ...string) *proc {
	t := w.t
	dir, argv, env, auth := w.launch(label)
	p := &proc{w: w, label: label, cwd: filepath.Join(dir, "work"), home: filepath.Join(dir, "home"),
		env: env, argv: argv, stderr: &syncio.Buffer{}}
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "ACP_GUARD_INTEROP_MARK="); ok {
			p.mark = v
		}
	}
	cmd := argv
	if !direct {
		cmd = append([]string{w.bin, "--grace", "1s", "--log-level", "info",
			"--state-dir", filepath.Join(dir, "state"),
			"--record", filepath.Join(w.out, label+".jsonl"), "--record-overwrite"}, guardArgs...)
		cmd = append(append(cmd, "--"), argv...)
	}
	c, err := Start(Options{Argv: cmd, Env: env, Dir: p.cwd, Stderr: p.stderr})
	if err != nil {
		t.Fatal(err)
	}
	p.Client = c
	t.Cleanup(func() {
		c.Kill()
		killMarked(p.mark)
		if t.Failed() {
			t.Logf("%s stderr (last 4 KiB):\n%s", label, tail(p.stderr.String(), 4096))
		}
	})
	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
	defer cancel()
	if p.init, err = c.Initialize(ctx); err != nil {
		t.Fatalf("%s: initialize: %v", label, err)
	}
	if auth != "" {
		if err := c.Authenticate(ctx, auth); err != nil {
			t.Fatalf("%s: authenticate: %v", label, err)
		}
	}
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// turn opens a new session, runs one prompt with the script in place and
// returns the turn and how many chat requests the provider saw.
func (p *proc) turn(name string, script fp.Script) (Turn, int) {
	t := p.w.t
	p.w.setScript(script)
	ctx, cancel := context.WithTimeout(p.w.ctx, 2*time.Minute)
	defer cancel()
	sid, _, err := p.NewSession(ctx, p.cwd)
	if err != nil {
		t.Fatalf("%s/%s: session/new: %v", p.label, name, err)
	}
	turn, err := p.Prompt(ctx, sid, "Say hello")
	if err != nil {
		t.Fatalf("%s/%s: %v", p.label, name, err)
	}
	n := p.w.chatRequests()
	t.Logf("%s/%s: provider requests %d; response %s; kinds %v", p.label, name, n, turn.Response.Raw, turn.Kinds())
	if turn.Responses != 1 {
		t.Errorf("%s/%s: responses to the prompt: got %d, want 1", p.label, name, turn.Responses)
	}
	return turn, n
}

func (w *world) setScript(s fp.Script) {
	if s == nil {
		s = fp.Script{}
	}
	if err := w.fp.SetScript(s); err != nil {
		w.t.Fatal(err)
	}
	w.fp.ResetStats()
}

// chatRequests counts the requests on the agent's chat route.
func (w *world) chatRequests() int { return w.fp.Count(capture.MainKey(w.agent.API)) }

// script returns a capture scenario's steps for this agent's API, the
// first step answering times requests (-1: all) and then success.
func (w *world) script(scenario string, times int) fp.Script {
	sc, ok := capture.Scenarios()[scenario]
	if !ok {
		w.t.Fatalf("unknown scenario %s", scenario)
	}
	steps := sc.Steps(w.agent.API)
	if steps == nil {
		w.t.Fatalf("scenario %s does not apply to %s", scenario, w.ac.name)
	}
	steps = slices.Clone(steps)
	steps[0].Times = times
	return fp.Script{capture.MainKey(w.agent.API): steps}
}

// stop disconnects the client and checks that acp-guard (or the agent)
// exits and leaves no process behind.
func (p *proc) stop(wantExit bool) {
	t := p.w.t
	ctx, cancel := context.WithTimeout(p.w.ctx, 20*time.Second)
	defer cancel()
	exited := p.Stop(ctx)
	if wantExit && !exited {
		t.Errorf("%s: did not exit within 20 s of stdin closing", p.label)
	}
	if left := waitUnmarked(p.mark, 10*time.Second); len(left) > 0 {
		t.Errorf("%s: processes left after exit: %v", p.label, left)
	}
	killMarked(p.mark)
}

func (w *world) run() {
	t := w.t
	ac := w.ac
	api := w.agent.API
	main := capture.MainKey(api)

	// 1. Baseline: the agent alone.
	direct := w.start("direct", true)
	base, _ := direct.turn("success", nil)
	direct.Kill()
	killMarked(direct.mark)

	// 2. acp-guard without a policy.
	plain := w.start("plain", false)
	if !bytes.Equal(plain.init.Raw, direct.init.Raw) {
		t.Errorf("initialize response differs through acp-guard:\n got %s\nwant %s", plain.init.Raw, direct.init.Raw)
	}
	got, n := plain.turn("success", nil)
	if !bytes.Equal(got.Response.Raw, base.Response.Raw) {
		t.Errorf("success: prompt response through acp-guard: got %s, want %s", got.Response.Raw, base.Response.Raw)
	}
	if g, b := Shape(got.Kinds()), Shape(base.Kinds()); !slices.Equal(g, b) {
		t.Errorf("success: update kinds through acp-guard: got %v, want %v", g, b)
	}
	if got.Text() != base.Text() || got.Text() == "" {
		t.Errorf("success: text through acp-guard: got %q, want %q", got.Text(), base.Text())
	}
	if n != 1 {
		t.Errorf("success: provider requests: got %d, want 1", n)
	}

	// Transient failure without a policy: one annotated error.
	got, n = plain.turn("transient-no-policy", w.script("unavailable_503", -1))
	expectError(t, "transient-no-policy", got, "provider_unavailable", "transient")
	if n != ac.attempts {
		t.Errorf("transient-no-policy: provider requests (the agent's own attempts): got %d, want %d", n, ac.attempts)
	}
	expectNotices(t, "transient-no-policy", got, 0)

	// Reset hints (no policy): what each agent passes through.
	w.resetHints(plain)
	plain.stop(true)

	// 3. acp-guard with the suite policy.
	pol := w.start("policy", false, "--policy", w.policy)

	// Transient failure outlasting the agent's retries, then recovery.
	got, n = pol.turn("transient-recovers", w.script("unavailable_503", ac.attempts))
	if ac.staleAfterError {
		expectStale(t, "transient-recovers", got)
	} else if got.StopReason() != "end_turn" || got.Text() == "" {
		t.Errorf("transient-recovers: got %s text %q, want end_turn with text", got.Response.Raw, got.Text())
	}
	if ac.staleAfterError {
		// The retry's provider request happens after the stale answer.
		w.waitRequests(ac.attempts + 1)
	} else if n != ac.attempts+1 {
		t.Errorf("transient-recovers: provider requests: got %d, want %d (agent) + 1 (acp-guard)", n, ac.attempts)
	}
	if ns := expectNotices(t, "transient-recovers", got, 1); len(ns) == 1 {
		if ns[0].Action != "retry" || ns[0].Class != "transient" || ns[0].Code != "provider_unavailable" || ns[0].Attempt != 1 || ns[0].DelayMs != 2000 {
			t.Errorf("transient-recovers: notice: got %+v, want retry 1/1 in 2000 ms, provider_unavailable/transient", ns[0])
		}
	}

	// Text streamed, then a failure: never retried.
	got, n = pol.turn("text-then-fail", w.script(ac.textFail, -1))
	expectNotices(t, "text-then-fail", got, 0)
	if ac.textFailSurfaces {
		pe := expectError(t, "text-then-fail", got, "agent_transport_lost", "transient")
		if pe != nil && (pe.ReplaySafe || !pe.Evidence.AssistantOutput) {
			t.Errorf("text-then-fail: replaySafe %v, assistantOutput %v; want false, true", pe.ReplaySafe, pe.Evidence.AssistantOutput)
		}
	} else if got.StopReason() != "end_turn" || got.Err() != nil {
		// The agent swallows the failure (docs/real-agent-errors.md); if it
		// starts reporting it, this case must move to the surfaced branch.
		t.Errorf("text-then-fail: got %s, want the agent's silent end_turn", got.Response.Raw)
	}
	if got.Text() == "" {
		t.Errorf("text-then-fail: the client saw no text")
	}
	_ = n

	// Auth failure and context overflow: not retried.
	for _, c := range []struct{ scenario, code, class string }{
		{"unauthorized_401", "auth_required", "hard"},
		{"context_overflow", "context_overflow", "request"},
	} {
		got, _ = pol.turn(c.scenario, w.script(c.scenario, -1))
		if pe := expectError(t, c.scenario, got, c.code, c.class); pe != nil && pe.Recovery.Action != "stop" {
			t.Errorf("%s: recovery: got %+v, want stop", c.scenario, pe.Recovery)
		}
		expectNotices(t, c.scenario, got, 0)
	}

	// Quota with a short reset hint: wait, then succeed (gemini only: the
	// others drop or lengthen the hint, see resetHints).
	if ac.name == "gemini" {
		got, n = pol.turn("reset-wait", w.script("rate_limit_retry_after", ac.attempts))
		if got.StopReason() != "end_turn" || got.Text() == "" {
			t.Errorf("reset-wait: got %s, want end_turn with text", got.Response.Raw)
		}
		if n != ac.attempts+1 {
			t.Errorf("reset-wait: provider requests: got %d, want %d + 1", n, ac.attempts)
		}
		if ns := expectNotices(t, "reset-wait", got, 1); len(ns) == 1 && (ns[0].Action != "wait_for_reset" || ns[0].DelayMs != 3000 || ns[0].Code != "rate_limited") {
			t.Errorf("reset-wait: notice: got %+v, want wait_for_reset 3000 ms rate_limited", ns[0])
		}
	}

	// session/cancel during acp-guard's wait: one cancelled answer, no retry.
	w.cancelDuringWait(pol)

	// Model fallback: the first model keeps failing.
	fail := w.script("unavailable_503", -1)[main]
	got, _ = pol.turn("fallback", fp.Script{
		main + "@" + ac.model: fail,
		main:                  {{Times: -1, Text: fallbackText}},
	})
	if ac.staleAfterError {
		// acp-guard's retry on the first model gets the stale empty
		// end_turn, so the fallback is never reached.
		expectStale(t, "fallback", got)
		expectNotices(t, "fallback", got, 1)
		return
	}
	if got.StopReason() != "end_turn" || got.Text() != fallbackText {
		t.Errorf("fallback: got %s text %q, want end_turn with %q", got.Response.Raw, got.Text(), fallbackText)
	}
	st := w.fp.Stats()
	var failed, other int
	for _, r := range st.Requests {
		if r.Route != main {
			continue
		}
		if r.Model == ac.model {
			failed++
		} else if r.Status == 200 {
			other++
		}
	}
	t.Logf("fallback: requests %+v", st.Requests)
	if failed != 2*ac.attempts || other == 0 {
		t.Errorf("fallback: requests to %s: got %d, want %d (agent × (1 + acp-guard retry)); successful requests to another model: %d, want > 0",
			ac.model, failed, 2*ac.attempts, other)
	}
	expectNotices(t, "fallback", got, 1)

	// Client disconnect mid-turn: acp-guard stops the agent and exits.
	w.disconnectMidTurn(pol)

	// 4. acpx, a third-party client.
	w.acpx()
}

type providerErr = acpguard.ProviderError

// expectError checks that the turn failed with a providerError of code
// and class, and returns it.
func expectError(t *testing.T, name string, got Turn, code, class string) *providerErr {
	t.Helper()
	pe := got.ProviderError()
	if pe == nil {
		t.Errorf("%s: got %s, want an error with providerError %s/%s", name, got.Response.Raw, code, class)
		return nil
	}
	if pe.Code != code || pe.Class != class {
		t.Errorf("%s: providerError: got %s/%s (rule %s), want %s/%s", name, pe.Code, pe.Class, pe.Rule, code, class)
	}
	if e := got.Err(); e == nil || e.Code == 0 {
		t.Errorf("%s: the agent's error code was lost: %s", name, got.Response.Raw)
	}
	return pe
}

// expectStale checks what the client gets when acp-guard's retry meets the
// staleAfterError bug: the agent answers the re-sent prompt at once with an
// empty end_turn, which acp-guard does not pass off as a recovery — the
// client gets the ProviderError of the failure instead (reason
// empty_retry_result).
func expectStale(t *testing.T, name string, got Turn) {
	t.Helper()
	pe := got.ProviderError()
	if pe == nil || pe.Recovery.Reason != "empty_retry_result" {
		t.Errorf("%s: got %s text %q, want acp-guard's ProviderError with recovery reason empty_retry_result (has the agent been fixed? update agentCases and docs)", name, got.Response.Raw, got.Text())
	} else {
		t.Logf("%s: KNOWN AGENT BUG: the agent answered the re-sent prompt with a stale empty end_turn; acp-guard reported the failure instead", name)
	}
}

// waitRequests waits up to 10 s for the provider to have seen n chat
// requests (work an agent does after answering the client).
func (w *world) waitRequests(n int) {
	deadline := time.Now().Add(10 * time.Second)
	for w.chatRequests() < n && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := w.chatRequests(); got != n {
		w.t.Errorf("provider requests: got %d, want %d", got, n)
	}
}

func expectNotices(t *testing.T, name string, got Turn, want int) []Notice {
	t.Helper()
	ns := got.Notices()
	if len(ns) != want {
		t.Errorf("%s: retry notices: got %d (%+v), want %d", name, len(ns), ns, want)
	}
	return ns
}

// resetHints checks the quota / rate-limit reset hints each agent passes
// through, without a policy.
func (w *world) resetHints(p *proc) {
	t := w.t
	switch w.ac.name {
	case "gemini":
		// "Suggested retry after 3s." → retryAfterMs 3000.
		got, _ := p.turn("reset-hint", w.script("rate_limit_retry_after", -1))
		pe := expectError(t, "reset-hint", got, "rate_limited", "transient")
		if pe != nil && (pe.RetryAfterMs == nil || *pe.RetryAfterMs != 3000) {
			t.Errorf("reset-hint: retryAfterMs: got %v, want 3000", pe.RetryAfterMs)
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
			t.Errorf("reset-hint: resetAt: got %v, want %s", pe.ResetAt, want)
		}
		t.Logf("reset-hint: %d requests", n)
	case "codex":
		// codex drops the 429 body and headers: no hint can survive.
		got, n := p.turn("reset-hint", w.script("rate_limit_retry_after", -1))
		pe := expectError(t, "reset-hint", got, "rate_limited", "transient")
		if pe != nil && (pe.RetryAfterMs != nil || pe.ResetAt != nil) {
			t.Errorf("reset-hint: codex passed a hint through after all: retryAfterMs %v resetAt %v (update docs/INTEROP.md)", pe.RetryAfterMs, pe.ResetAt)
		}
		if n != 1 {
			t.Errorf("reset-hint: provider requests: got %d, want 1 (codex does not retry 429 here)", n)
		}
	}
}

func sameInstant(a, b string) bool {
	ta, err1 := time.Parse(time.RFC3339, a)
	tb, err2 := time.Parse(time.RFC3339, b)
	return err1 == nil && err2 == nil && ta.Equal(tb)
}

// cancelDuringWait fails the provider for good, cancels as soon as the
// retry notice arrives, and checks one cancelled answer and no retry.
func (w *world) cancelDuringWait(p *proc) {
	t := w.t
	w.setScript(w.script("unavailable_503", -1))
	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
	defer cancel()
	sid, _, err := p.NewSession(ctx, p.cwd)
	if err != nil {
		t.Fatal(err)
	}
	pend, err := p.StartPrompt(sid, "Say hello")
	if err != nil {
		t.Fatal(err)
	}
	notice, _, err := p.WaitFor(ctx, pend.Mark, IsRetryNotice)
	if err != nil {
		t.Fatalf("cancel-during-wait: no retry notice: %v", err)
	}
	if err := p.Cancel(sid); err != nil {
		t.Fatal(err)
	}
	got, err := p.Finish(ctx, pend)
	if err != nil {
		t.Fatal(err)
	}
	if got.StopReason() != "cancelled" || got.Responses != 1 {
		t.Errorf("cancel-during-wait: got %s (%d responses), want one cancelled answer", got.Response.Raw, got.Responses)
	}
	// Let the notice's deadline pass: the retry must not happen.
	n, _ := noticeOf(notice)
	time.Sleep(time.Duration(n.DelayMs)*time.Millisecond + time.Second)
	if c := w.chatRequests(); c != w.ac.attempts {
		t.Errorf("cancel-during-wait: provider requests: got %d, want %d (no acp-guard retry)", c, w.ac.attempts)
	}
	t.Logf("cancel-during-wait: %s", got.Response.Raw)
	// The session still works.
	w.setScript(nil)
	after, err := p.Prompt(ctx, sid, "Say hello")
	if err != nil {
		t.Fatal(err)
	}
	if after.StopReason() != "end_turn" || (after.Text() == "") != w.ac.staleAfterError {
		t.Errorf("cancel-during-wait: next prompt: got %s text %q, want end_turn (empty: %v)", after.Response.Raw, after.Text(), w.ac.staleAfterError)
	}
}

// disconnectMidTurn stalls the provider, closes the client's stdin while
// the turn runs, and checks that acp-guard exits and the agent is gone.
func (w *world) disconnectMidTurn(p *proc) {
	t := w.t
	w.setScript(fp.Script{capture.MainKey(w.agent.API): {{Times: -1, Delay: fp.Duration(10 * time.Minute)}}})
	ctx, cancel := context.WithTimeout(w.ctx, time.Minute)
	defer cancel()
	sid, _, err := p.NewSession(ctx, p.cwd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.StartPrompt(sid, "Say hello"); err != nil {
		t.Fatal(err)
	}
	for w.chatRequests() == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("disconnect: the provider never saw the turn")
		case <-time.After(50 * time.Millisecond):
		}
	}
	p.stop(true)
	t.Logf("disconnect: acp-guard exited")
}

// acpx runs acpx exec through acp-guard: success, annotated error,
// retried success.
func (w *world) acpx() {
	t := w.t
	bin := filepath.Join(w.cache, "node_modules", ".bin", "acpx")
	if _, err := os.Stat(bin); err != nil {
		t.Errorf("acpx not installed: %v", err)
		return
	}
	cases := []struct {
		name      string
		policy    bool
		script    fp.Script
		wantStop  string
		wantCode  string
		wantNote  int
		wantCount int
	}{
		{name: "acpx-success", script: nil, wantStop: "end_turn", wantCount: 1},
		{name: "acpx-annotated", script: w.script("unavailable_503", -1), wantCode: "provider_unavailable", wantCount: w.ac.attempts},
		{name: "acpx-retried", policy: true, script: w.script("unavailable_503", w.ac.attempts), wantStop: "end_turn", wantNote: 1, wantCount: w.ac.attempts + 1},
	}
	for _, c := range cases {
		dir, argv, env, _ := w.launch(c.name)
		guard := []string{w.bin, "--grace", "1s", "--state-dir", filepath.Join(dir, "state"),
			"--record", filepath.Join(w.out, c.name+".jsonl"), "--record-overwrite"}
		if c.policy {
			guard = append(guard, "--policy", w.policy)
		}
		agentCmd := strings.Join(append(append(guard, "--"), argv...), " ")
		w.setScript(c.script)
		ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
		out, code, err := runAcpx(ctx, bin, filepath.Join(dir, "work"), env, agentCmd)
		cancel()
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		resp, notes, text := acpxOutcome(out)
		t.Logf("%s: exit %d, requests %d, response %s, text %q", c.name, code, w.chatRequests(), resp.Raw, text)
		turn := Turn{Response: resp}
		if c.wantStop == "end_turn" && (text == "") != (c.policy && w.ac.staleAfterError) {
			t.Errorf("%s: text %q (the stale empty answer expected: %v)", c.name, text, c.policy && w.ac.staleAfterError)
		}
		if c.policy && w.ac.staleAfterError {
			w.waitRequests(c.wantCount)
			continue
		}
		if got := turn.StopReason(); got != c.wantStop {
			t.Errorf("%s: stopReason: got %q, want %q (exit %d; output tail %s)", c.name, got, c.wantStop, code, tail(string(out), 2048))
		}
		if c.wantCode != "" {
			expectError(t, c.name, turn, c.wantCode, "transient")
			if code == 0 {
				t.Errorf("%s: acpx exit code: got 0, want non-zero for a failed turn", c.name)
			}
		} else if code != 0 {
			t.Errorf("%s: acpx exit code: got %d, want 0", c.name, code)
		}
		if notes != c.wantNote {
			t.Errorf("%s: retry notices: got %d, want %d", c.name, notes, c.wantNote)
		}
		if n := w.chatRequests(); n != c.wantCount {
			t.Errorf("%s: provider requests: got %d, want %d", c.name, n, c.wantCount)
		}
	}
}

// runAcpx runs `acpx --format json --approve-reads --agent CMD exec PROMPT`.
func runAcpx(ctx context.Context, bin, cwd string, env []string, agentCmd string) ([]byte, int, error) {
	argv := []string{bin, "--format", "json", "--timeout", "90", "--cwd", cwd,
		"--agent", agentCmd, "exec", "Say hello"}
	stderr := &syncio.Buffer{}
	c, err := Start(Options{Argv: argv, Env: env, Dir: cwd, Stderr: stderr})
	if err != nil {
		return nil, 0, err
	}
	c.CloseStdin()
	code, err := c.Wait(ctx)
	if err != nil {
		c.Kill()
		return nil, 0, fmt.Errorf("acpx did not finish: %v; stderr %s", err, tail(stderr.String(), 2048))
	}
	var out bytes.Buffer
	for _, f := range c.Frames(0) {
		out.Write(f.Line())
		out.WriteByte('\n')
	}
	if code != 0 {
		out.WriteString("stderr: " + tail(stderr.String(), 1024))
	}
	return out.Bytes(), code, nil
}

// acpxOutcome finds the session/prompt response and counts retry notices
// in acpx's JSON output (it prints the ACP frames it exchanges).
func acpxOutcome(out []byte) (Frame, int, string) {
	var resp Frame
	promptID := ""
	notes := 0
	text := ""
	for _, line := range bytes.Split(out, []byte("\n")) {
		var f struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *RPCError       `json:"error"`
		}
		if json.Unmarshal(line, &f) != nil {
			continue
		}
		fr := Frame{Raw: line, ID: f.ID, Method: f.Method, Params: f.Params, Result: f.Result, Error: f.Error}
		switch {
		case f.Method == "session/prompt" && len(f.ID) > 0:
			promptID = string(f.ID)
		case IsRetryNotice(fr):
			notes++
		case f.Method == "session/update":
			text += Turn{Updates: []Frame{fr}}.Text()
		case fr.IsResponse() && promptID != "" && string(f.ID) == promptID:
			resp = fr
		}
	}
	return resp, notes, text
}

// Processes carrying an environment marker.

func marked(mark string) []int {
	if mark == "" {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	needle := []byte("ACP_GUARD_INTEROP_MARK=" + mark + "\x00")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if bytes.Contains(append(b, 0), needle) {
			if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && zombie(st) {
				continue
			}
			pids = append(pids, pid)
		}
	}
	return pids
}

func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

func waitUnmarked(mark string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		left := marked(mark)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func killMarked(mark string) {
	for _, pid := range marked(mark) {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
}
