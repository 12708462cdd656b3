package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

// consoleClient does not follow redirects: an action's answer is its
// redirect's message.
var consoleClient = &http.Client{
	Timeout:       30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// startConsole runs `acp-guard console` over st in this process, on a
// free loopback port, until the test ends.
func startConsole(t *testing.T, st heldStore) string {
	t.Helper()
	o := &consoleOptions{addr: "127.0.0.1:0", poll: time.Second, out: io.Discard, err: io.Discard}
	o.held.stateDir = st.state
	o.held.store.store = st.url
	addrc := make(chan string, 1)
	o.ready = func(a string) { addrc <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runConsole(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("console: %v", err)
		}
	})
	select {
	case a := <-addrc:
		return "http://" + a
	case err := <-done:
		t.Fatalf("console did not start: %v", err)
	}
	return ""
}

func consoleGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := consoleClient.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", u, resp.Status, b)
	}
	return string(b)
}

// consolePost posts an action's form and returns the status and the
// message the page will show.
func consolePost(t *testing.T, base string, form url.Values) (int, string) {
	t.Helper()
	resp, err := consoleClient.PostForm(base+"/act", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusSeeOther {
		return resp.StatusCode, string(b)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, loc.Query().Get("msg")
}

var (
	csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	holdField = regexp.MustCompile(`name="hold" value="([0-9]+)"`)
)

// The console, beside a guarded session whose prompt is held, lists the
// prompt and the open circuit; its retry-now button (a POST with the
// page's CSRF token) goes through `held`'s action path and the prompt is
// re-sent and answered; the same button on the hold that ended, a stale
// hold or a forged token is refused. Through the file store and NATS.
func TestE2EConsoleRetryNow(t *testing.T) {
	t.Parallel()
	for _, store := range []func(*testing.T) heldStore{fileStore, natsStore} {
		st := store(t)
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			openCircuit(t, st)
			flags := append([]string{"--policy", operatorPolicy(t, 3600), "--log-level", "info", "--jitter-seed", slowSeed(time.Hour)}, st.flags...)
			p := startBin(t, nil, proxy(t, flags, "--scenario", "fail-then-succeed", "--fail", "1", "--error", "overloaded", "--agent-name", "codex-acp")...)
			p.Send(acptest.Initialize(1), acptest.SessionNew(2))
			p.Until("1")
			sid := sessionID(t, p.Until("2"))
			p.Send(acptest.Prompt(3, sid))
			awaitHeld(t, st, sid, "retry_wait")

			base := startConsole(t, st)
			loaded := time.Now()
			page := consoleGet(t, base+"/")
			t.Logf("page load: %s", time.Since(loaded).Round(time.Millisecond))
			for _, want := range []string{sid, "retry_wait", "retry now", "codex-acp", "model-a", ">open<"} {
				if !strings.Contains(page, want) {
					t.Errorf("the page lacks %q:\n%s", want, page)
				}
			}
			if live := consoleGet(t, base+"/state"); !strings.Contains(live, sid) {
				t.Errorf("/state lacks the held prompt")
			}
			m, h := csrfField.FindStringSubmatch(page), holdField.FindStringSubmatch(page)
			if m == nil || h == nil {
				t.Fatalf("no action form on the page:\n%s", page)
			}
			hold, _ := strconv.ParseUint(h[1], 10, 64)
			holder := regexp.MustCompile(`name="holder" value="([^"]+)"`).FindStringSubmatch(page)[1]
			form := func(csrf string, hold uint64) url.Values {
				return url.Values{"csrf": {csrf}, "action": {"retry_now"}, "session": {sid}, "holder": {holder}, "hold": {strconv.FormatUint(hold, 10)}}
			}
			if code, _ := consolePost(t, base, form("x"+m[1][1:], hold)); code != http.StatusForbidden {
				t.Errorf("a forged CSRF token: status %d, want 403", code)
			}
			if code, msg := consolePost(t, base, form(m[1], hold+1)); code != http.StatusSeeOther || !strings.Contains(msg, "moved on") {
				t.Errorf("another hold: %d %q, want refused as moved on", code, msg)
			}
			asked := time.Now()
			code, msg := consolePost(t, base, form(m[1], hold))
			t.Logf("retry now, POST to the holder's answer: %s", time.Since(asked).Round(time.Millisecond))
			if code != http.StatusSeeOther || !strings.Contains(msg, "retry_wait → retrying") {
				t.Fatalf("retry now: %d %q; listed now %+v; proxy: %s", code, msg, heldEntries(t, st), p.Stderr.Tail(3000))
			}
			checkOperatorAnswer(t, p.Until("3"), "result")
			if code, msg := consolePost(t, base, form(m[1], hold)); !strings.Contains(msg, "moved on") {
				t.Errorf("the same button again: %d %q, want refused as moved on", code, msg)
			}
			if _, code := p.Finish(); code != 0 {
				t.Errorf("proxy exit %d: %s", code, p.Stderr.Tail(2000))
			}
		})
	}
}

func TestConsoleAddrNeedsToken(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"console", "--addr", "0.0.0.0:7171"}, 2, "not loopback: give --token"},
		{[]string{"console", "--addr", ":7171"}, 2, "listens on every interface"},
		{[]string{"console", "--addr", "nohostport"}, 2, "--addr"},
	} {
		var out, errb strings.Builder
		if code := run(context.Background(), tt.args, strings.NewReader(""), &out, &errb); code != tt.code || !strings.Contains(errb.String(), tt.err) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, errb.String(), tt.code, tt.err)
		}
	}
}
