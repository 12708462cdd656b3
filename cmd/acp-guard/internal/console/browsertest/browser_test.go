// Package browsertest drives `acp-guard console` and a `replay --html`
// report in a real browser: Debian's headless Chromium (/usr/bin/chromium,
// or $CHROMIUM), through the DevTools protocol (github.com/chromedp/
// chromedp). It is a module of its own so that chromedp stays out of
// acp-guard's go.mod; `make test-browser` runs it. Screenshots are kept
// in artefacts/ (or $BROWSERTEST_ARTEFACTS).
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/internal/natstest"
	"github.com/acp-guard/acp-guard/policy"
)

// watchdog bounds every wait on the browser: a hang guard, not a timing
// assertion.
const watchdog = 60 * time.Second

// browser starts a fresh headless Chromium for the test and returns a tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no Chromium at %s (apt-get install -y chromium)", path)
		}
		t.Skipf("no Chromium at %s (apt-get install -y chromium)", path)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	// The first Do starts the browser, for the context's whole life (no
	// timeout on it).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// step runs actions under the watchdog.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, watchdog)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// value runs one action that returns a value, under the watchdog.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, watchdog)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// screenshot keeps a full-page screenshot as a test artefact.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	keep(t, name, value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100)))
}

// keep writes a screenshot to the artefacts directory.
func keep(t *testing.T, name string, png []byte) {
	t.Helper()
	dir := os.Getenv("BROWSERTEST_ARTEFACTS")
	if dir == "" {
		dir = "artefacts"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// slowSeed is a jitter seed whose first draw from backoff is at least
// five sixths of it: the retry stays an hour off while the test acts.
func slowSeed(backoff time.Duration) string {
	for seed := uint64(1); ; seed++ {
		if policy.NewJitter(seed)(backoff) >= backoff*5/6 {
			return strconv.FormatUint(seed, 10)
		}
	}
}

// The console, beside a guarded session whose prompt waits an hour for
// its retry: the browser sees the held prompt appear, clicks "retry now",
// reads the holder's answer on the page, and the session's client gets
// its prompt answered by the re-sent attempt; the circuit the failure
// opened is closed by that success.
func TestBrowserConsoleRetryNow(t *testing.T) {
	ctx := browser(t)
	state := filepath.Join(t.TempDir(), "state")
	pol := acptest.WriteFile(t, "policy.json", `{"version":1,"transient":{"retry":{"enabled":true,"max_retries":10,"initial_interval_seconds":3600}}}`)
	env := acptest.Options{Env: acptest.CleanEnv(t)}
	bin := acptest.Bin(t)
	sess := acptest.Start(t, append([]string{bin, "--state-dir", state, "--policy", pol, "--jitter-seed", slowSeed(time.Hour), "--log-level", "info", "--"},
		acptest.DemoAgent(t, "--scenario", "fail-then-succeed", "--fail", "1", "--error", "overloaded", "--agent-name", "codex-acp")...), env)
	con := acptest.Start(t, []string{bin, "console", "--state-dir", state, "--addr", "127.0.0.1:0", "--poll", "500ms"}, env)
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(con.WaitStderr("(store "))

	step(t, ctx, "open the console", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`#held`)))
	screenshot(t, ctx, "console-empty")

	sess.Send(acptest.Initialize(1), acptest.SessionNew(2))
	sess.Until("1")
	var r struct {
		SessionID string `json:"sessionId"`
	}
	frames := sess.Until("2")
	if err := json.Unmarshal(frames[len(frames)-1].Result, &r); err != nil || r.SessionID == "" {
		t.Fatalf("session/new answered %s", frames[len(frames)-1].Raw)
	}
	sess.Send(acptest.Prompt(3, r.SessionID))

	row := fmt.Sprintf(`tr.held[data-session=%q][data-state="retry_wait"]`, r.SessionID)
	step(t, ctx, "see the held prompt appear", chromedp.WaitVisible(chromedp.CSS(row)))
	screenshot(t, ctx, "console-held")
	step(t, ctx, "click retry now", chromedp.Click(chromedp.CSS(row+` button.act-retry_now`)), chromedp.WaitVisible(chromedp.CSS(`#flash`)))
	flash := value(t, ctx, "read the answer", chromedp.Text(chromedp.CSS(`#flash`)))
	screenshot(t, ctx, "console-retried")
	if !strings.Contains(flash, "retry_wait → retrying") {
		t.Fatalf("after retry now the page says %q", flash)
	}
	answer := sess.Until("3")
	last := answer[len(answer)-1]
	if last.Error != nil || !strings.Contains(string(last.Raw), `"stopReason":"end_turn"`) {
		t.Errorf("the prompt was answered %s, want the re-sent attempt's result", last.Raw)
	}
	if !strings.Contains(sess.Stderr.String(), `msg="retry sent"`) {
		t.Errorf("the session never re-sent the prompt:\n%s", sess.Stderr.Tail(3000))
	}
	step(t, ctx, "see the prompt leave the list", chromedp.WaitNotPresent(chromedp.CSS(row)))
	// The retried prompt's success closes the circuit its failure opened.
	step(t, ctx, "see the circuit close", chromedp.WaitVisible(chromedp.CSS(`tr.circuit[data-key="default/codex-acp/model-a/provider"][data-state="closed"]`)))
}

// A replay --html report of the terminal transcripts, opened from a file:
// every turn's verdict — its ProviderError code, else its outcome — is on
// the page, in order.
func TestBrowserReplayReport(t *testing.T) {
	ctx := browser(t)
	bin := acptest.Bin(t)
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "..", "testdata", "transcripts", "terminal"))
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	out, err := exec.Command(bin, "replay", "--html", dir).Output()
	if err != nil {
		t.Fatalf("replay --html: %v", err)
	}
	if err := os.WriteFile(page, out, 0o600); err != nil {
		t.Fatal(err)
	}
	js, err := exec.Command(bin, "replay", "--json", dir).Output()
	if err != nil {
		t.Fatalf("replay --json: %v", err)
	}
	var want []string
	for _, ln := range strings.Split(strings.TrimSpace(string(js)), "\n") {
		var tr struct {
			Outcome       string
			ProviderError *struct{ Code string }
		}
		if err := json.Unmarshal([]byte(ln), &tr); err != nil {
			t.Fatal(err)
		}
		v := tr.Outcome
		if tr.ProviderError != nil {
			v = tr.ProviderError.Code
		}
		want = append(want, v)
	}
	step(t, ctx, "open the report", chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.CSS(`table.turns`)))
	got := value(t, ctx, "read the verdicts", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("tr.turn")).map(function (tr) {
			var c = tr.querySelector("code.verdict-code");
			return c ? c.textContent : tr.querySelector(".outcome").textContent;
		})`))
	// The report runs long: the window's worth is enough to look at.
	keep(t, "replay-report", value(t, ctx, "screenshot replay-report", chromedp.CaptureScreenshot()))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the page's verdicts:\n%q\nwant, from replay --json:\n%q", got, want)
	}
}

// A scripted outage, written to the circuits' store as sessions would
// write it — a failure opens the circuit, a session takes the probe lease,
// the probe succeeds and closes it — is on the console as it happens:
// open, probing with the lease's holder, closed. Through the file store
// and through NATS.
func TestBrowserConsoleCircuitOutage(t *testing.T) {
	for _, tt := range []struct {
		name string
		open func(t *testing.T, state string) (circuit.Store, []string)
	}{
		{"file", func(t *testing.T, state string) (circuit.Store, []string) {
			st, err := circuit.OpenStore("file", circuit.Options{Dir: state})
			if err != nil {
				t.Fatal(err)
			}
			return st, []string{"--state-dir", state}
		}},
		{"nats", func(t *testing.T, state string) (circuit.Store, []string) {
			url := natstest.Start(t).URL()
			st, err := circuit.OpenStore(url, circuit.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return st, []string{"--circuits", url, "--state-dir", state}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := browser(t)
			st, flags := tt.open(t, filepath.Join(t.TempDir(), "state"))
			defer st.Close()
			con := acptest.Start(t, append([]string{acptest.Bin(t), "console", "--addr", "127.0.0.1:0", "--poll", "500ms"}, flags...),
				acptest.Options{Env: acptest.CleanEnv(t)})
			url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(con.WaitStderr("(store "))
			step(t, ctx, "open the console", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`#circuits`)))

			key, err := circuit.Key{Provider: "codex-acp", Model: "gpt-5", Scope: "provider"}.Normalize()
			if err != nil {
				t.Fatal(err)
			}
			bg := context.Background()
			write := func(change func(r *circuit.Record, now time.Time)) {
				t.Helper()
				cur, rev, err := st.Get(bg, key.ID())
				if err != nil {
					t.Fatal(err)
				}
				r := circuit.Record{Key: key}
				if cur != nil {
					r = *cur
				}
				now := time.Now().UTC()
				change(&r, now)
				r.UpdatedAt = now
				if err := st.CompareAndSwap(bg, key.ID(), r, rev); err != nil {
					t.Fatal(err)
				}
			}
			row := `tr.circuit[data-key="default/codex-acp/gpt-5/provider"]`
			write(func(r *circuit.Record, now time.Time) {
				r.OpenUntil, r.OpenedAt, r.Code, r.Class, r.Failures, r.Epoch = now.Add(10*time.Minute), now, "provider_overloaded", "transient", 1, r.Epoch+1
			})
			step(t, ctx, "see the circuit open", chromedp.WaitVisible(chromedp.CSS(row+`[data-state="open"]`)))
			screenshot(t, ctx, "circuit-"+tt.name+"-open")
			write(func(r *circuit.Record, now time.Time) {
				r.Lease = &circuit.Lease{Holder: "build-7/4242/probe", Until: now.Add(30 * time.Second), GrantedAt: now}
				r.Probes++
			})
			step(t, ctx, "see the probe's lease", chromedp.WaitVisible(chromedp.CSS(row+`[data-state="probing"]`)))
			holder := value(t, ctx, "read the lease holder", chromedp.Text(chromedp.CSS(row+` td:nth-child(9)`)))
			if holder != "build-7/4242/probe" {
				t.Errorf("lease holder on the page %q, want build-7/4242/probe", holder)
			}
			screenshot(t, ctx, "circuit-"+tt.name+"-probing")
			write(func(r *circuit.Record, now time.Time) {
				r.OpenUntil, r.ClosedAt, r.Lease, r.Failures, r.Epoch = time.Time{}, now, nil, 0, r.Epoch+1
			})
			step(t, ctx, "see the circuit close", chromedp.WaitVisible(chromedp.CSS(row+`[data-state="closed"]`)))
			screenshot(t, ctx, "circuit-"+tt.name+"-closed")
		})
	}
}

// Live sessions on the page: a guarded session beside the console
// appears in the live list with its agent, turn and state once its turn
// is answered, its ProviderError is in the last hour's chart, and it
// leaves the list when it ends. Through the file store and through NATS.
func TestBrowserConsoleLiveSession(t *testing.T) {
	for _, tt := range []struct {
		name  string
		flags func(t *testing.T, state string) []string
	}{
		{"file", func(t *testing.T, state string) []string { return []string{"--state-dir", state} }},
		{"nats", func(t *testing.T, state string) []string {
			return []string{"--circuits", natstest.Start(t).URL(), "--state-dir", state}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := browser(t)
			flags := tt.flags(t, filepath.Join(t.TempDir(), "state"))
			env := acptest.Options{Env: acptest.CleanEnv(t)}
			bin := acptest.Bin(t)
			con := acptest.Start(t, append([]string{bin, "console", "--addr", "127.0.0.1:0", "--poll", "500ms"}, flags...), env)
			url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(con.WaitStderr("(store "))
			step(t, ctx, "open the console", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`#sessions`)))

			pol := acptest.WriteFile(t, "policy.json", `{"version":1,"transient":{"retry":{"enabled":true,"max_retries":3,"initial_interval_seconds":1}}}`)
			argv := append(append([]string{bin, "--policy", pol}, flags...), "--")
			sess := acptest.Start(t, append(argv, acptest.DemoAgent(t, "--scenario", "fail-then-succeed", "--fail", "1", "--error", "overloaded", "--agent-name", "codex-acp")...), env)
			sess.Send(acptest.Initialize(1), acptest.SessionNew(2))
			sess.Until("1")
			var r struct {
				SessionID string `json:"sessionId"`
			}
			frames := sess.Until("2")
			if err := json.Unmarshal(frames[len(frames)-1].Result, &r); err != nil || r.SessionID == "" {
				t.Fatalf("session/new answered %s", frames[len(frames)-1].Raw)
			}
			sess.Send(acptest.Prompt(3, r.SessionID))
			sess.Until("3")

			row := fmt.Sprintf(`tr.session[data-holder*="/%d/"]`, sess.Pid())
			step(t, ctx, "see the live session, idle after its turn",
				chromedp.WaitVisible(chromedp.CSS(row+`[data-state="idle"][data-turn="1"]`)),
				chromedp.WaitVisible(chromedp.CSS(`tr.errors[data-agent="codex-acp"][data-code="provider_overloaded"][data-n="1"] svg rect.bar`)))
			agent := value(t, ctx, "read the agent", chromedp.Text(chromedp.CSS(row+` td:nth-child(2)`)))
			if agent != "codex-acp" {
				t.Errorf("agent on the page %q, want codex-acp", agent)
			}
			screenshot(t, ctx, "console-live-"+tt.name)
			sess.CloseStdin()
			if code := sess.Wait(); code != 0 {
				t.Errorf("session exit %d", code)
			}
			step(t, ctx, "see the ended session leave the list", chromedp.WaitNotPresent(chromedp.CSS(row)))
		})
	}
}
