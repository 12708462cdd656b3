package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/acptest"
	"github.com/acp-guard/acp-guard/presence"
)

// liveRow is one session row of the console's live part.
type liveRow struct {
	holder, state      string
	turn               int
	heartbeat, expires time.Time
}

var (
	sessionRow = regexp.MustCompile(`<tr class="session" data-holder="([^"]+)" data-state="([^"]+)" data-turn="(\d+)" data-heartbeat="([^"]+)" data-expires="([^"]+)">`)
	asOf       = regexp.MustCompile(`id="asof" data-now="([^"]+)"`)
)

// liveState reads the console's live part: the console's now and its
// session rows by the pid in their holder (host/pid/guard).
func liveState(t *testing.T, base string) (time.Time, map[int]liveRow, string) {
	t.Helper()
	body := consoleGet(t, base+"/state")
	m := asOf.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no as-of time in:\n%s", body)
	}
	now, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		t.Fatal(err)
	}
	rows := map[int]liveRow{}
	for _, m := range sessionRow.FindAllStringSubmatch(body, -1) {
		parts := strings.Split(m[1], "/")
		pid, _ := strconv.Atoi(parts[len(parts)-2])
		turn, _ := strconv.Atoi(m[3])
		hb, err1 := time.Parse(time.RFC3339Nano, m[4])
		ex, err2 := time.Parse(time.RFC3339Nano, m[5])
		if err1 != nil || err2 != nil {
			t.Fatalf("row %q: %v %v", m[0], err1, err2)
		}
		rows[pid] = liveRow{holder: m[1], state: m[2], turn: turn, heartbeat: hb, expires: ex}
	}
	return now, rows, body
}

// pollLive reads the live part until cond holds of it; each reading is
// the event (the watchdog is a hang guard, not a timing assertion).
func pollLive(t *testing.T, base, what string, cond func(now time.Time, rows map[int]liveRow, body string) bool) {
	t.Helper()
	guard := time.Now().Add(2 * time.Minute)
	for {
		now, rows, body := liveState(t, base)
		if cond(now, rows, body) {
			return
		}
		if time.Now().After(guard) {
			t.Fatalf("%s: never; last live part:\n%s", what, body)
		}
	}
}

// Real guarded sessions, through the built binary, beside `acp-guard
// console` (the built binary too): each appears on the page as it starts,
// with its agent, turn and state, and its ProviderError in the chart; one
// that ends cleanly leaves the list at once (its record is deleted); one
// that is killed stays listed exactly while its last heartbeat's lease
// runs — until heartbeat + 15 s by the console's clock, not a reading
// sooner — and is gone after. The prompt's text is on no page and in no
// record. Through the file store and NATS.
func TestE2EConsoleLiveSessions(t *testing.T) {
	t.Parallel()
	for _, store := range []func(*testing.T) heldStore{fileStore, natsStore} {
		st := store(t)
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			con := startBin(t, nil, append([]string{"console", "--addr", "127.0.0.1:0", "--poll", "200ms"}, st.flags...)...)
			base := strings.TrimSuffix(regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(con.WaitStderr("(store ")), "/")
			const secret = "the-prompt-text-that-must-stay-private"
			start := func(args ...string) (*acptest.Proc, string) {
				flags := append([]string{"--policy", acptest.RetryPolicy(t, 2, 1), "--log-level", "info"}, st.flags...)
				p := startBin(t, nil, proxy(t, flags, append(args, "--agent-name", "codex-acp")...)...)
				p.Send(acptest.Initialize(1), acptest.SessionNew(2))
				p.Until("1")
				sid := sessionID(t, p.Until("2"))
				p.Send(acptest.Request(3, "session/prompt", `{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"`+secret+`"}]}`))
				if f := p.Until("3"); f[len(f)-1].Error != nil {
					t.Fatalf("prompt answered %s", f[len(f)-1].Raw)
				}
				return p, sid
			}
			clean, _ := start("--scenario", "success")
			killed, _ := start("--scenario", "fail-then-succeed", "--fail", "1", "--error", "overloaded")

			pollLive(t, base, "both sessions idle after their turn", func(_ time.Time, rows map[int]liveRow, body string) bool {
				a, b := rows[clean.Pid()], rows[killed.Pid()]
				return a.state == presence.StateIdle && a.turn == 1 && b.state == presence.StateIdle && b.turn == 1 &&
					strings.Contains(body, `data-agent="codex-acp" data-code="provider_overloaded" data-class="transient" data-n="1"`)
			})
			_, rows, body := liveState(t, base)
			for pid, r := range rows {
				if !r.expires.Equal(r.heartbeat.Add(presence.Lease)) {
					t.Errorf("session %d: expires %v, want heartbeat %v + %v", pid, r.expires, r.heartbeat, presence.Lease)
				}
			}
			if strings.Contains(body, secret) {
				t.Errorf("the prompt's text is on the page")
			}
			if st.name == "file" {
				b, err := os.ReadFile(filepath.Join(st.state, presence.FileName))
				if err != nil || strings.Contains(string(b), secret) || !strings.Contains(string(b), `"codex-acp"`) {
					t.Errorf("presence.json (%v): want the records without the prompt's text:\n%s", err, b)
				}
			}

			// A clean end deletes the record: gone at once, the other stays.
			clean.CloseStdin()
			if _, code := clean.Finish(); code != 0 {
				t.Errorf("clean session exit %d", code)
			}
			// The process exited, so its Close (the delete) is done: the
			// first reading after it no longer lists it.
			if _, rows, body := liveState(t, base); rows[clean.Pid()].holder != "" || rows[killed.Pid()].holder == "" {
				t.Fatalf("after the clean exit, want only the other session listed:\n%s", body)
			}

			// A killed session writes nothing more: listed while its last
			// heartbeat's lease runs, gone from then on.
			killed.Signal(os.Kill)
			<-killed.Done()
			var last time.Time
			pollLive(t, base, "the killed session leaves the list after its lease", func(now time.Time, rows map[int]liveRow, _ string) bool {
				r, listed := rows[killed.Pid()]
				if listed {
					if r.heartbeat.After(last) {
						last = r.heartbeat
					}
					if !now.Before(r.heartbeat.Add(presence.Lease)) {
						t.Fatalf("listed at %v, past its lease (heartbeat %v + %v)", now, r.heartbeat, presence.Lease)
					}
					return false
				}
				if now.Before(last.Add(presence.Lease)) {
					t.Fatalf("gone at %v, before its lease ran out (heartbeat %v + %v)", now, last, presence.Lease)
				}
				return true
			})
		})
	}
}

// Presence is off unless a store is named: a session with --circuits off
// or memory writes no presence record, whatever the state directory.
func TestE2EPresenceOffWithoutStore(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"off", "memory"} {
		state := filepath.Join(t.TempDir(), "state")
		p := startBin(t, nil, proxy(t, []string{"--circuits", spec, "--state-dir", state, "--policy", acptest.RetryPolicy(t, 2, 1)},
			"--scenario", "fail-then-succeed", "--fail", "1", "--error", "overloaded")...)
		p.Send(acptest.Initialize(1), acptest.SessionNew(2))
		p.Until("1")
		p.Send(acptest.Prompt(3, sessionID(t, p.Until("2"))))
		p.Until("3")
		if _, code := p.Finish(); code != 0 {
			t.Errorf("--circuits %s: exit %d", spec, code)
		}
		if _, err := os.Lstat(filepath.Join(state, presence.FileName)); err == nil {
			t.Errorf("--circuits %s: %s was written", spec, presence.FileName)
		}
	}
}
