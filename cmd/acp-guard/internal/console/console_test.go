package console

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/held"
	"github.com/acp-guard/acp-guard/presence"
)

func TestConsoleCheckAddr(t *testing.T) {
	for _, tt := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:7171", "", true},
		{"localhost:0", "", true},
		{"[::1]:7171", "", true},
		{"0.0.0.0:7171", "", false},
		{":7171", "", false},
		{"10.0.0.5:7171", "", false},
		{"10.0.0.5:7171", "t", true},
		{"nohost", "", false},
	} {
		if err := CheckAddr(tt.addr, tt.token); (err == nil) != tt.ok {
			t.Errorf("CheckAddr(%q, %q) = %v, want ok %v", tt.addr, tt.token, err, tt.ok)
		}
	}
}

// fakeSource holds one prompt and one open circuit; Act records what it
// was asked.
type fakeSource struct {
	mu    sync.Mutex
	asked []Action
}

func (f *fakeSource) source() Source {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	next := now.Add(time.Minute)
	return Source{
		Now: func() time.Time { return now },
		Held: func(context.Context) ([]held.Stored, error) {
			return []held.Stored{{ID: "x", Entry: held.Entry{SessionID: "s<1>", RequestID: "3", Agent: "codex-acp", Code: "provider_overloaded",
				Class: "transient", State: "retry_wait", Hold: 2, Since: now.Add(-time.Minute), Next: &next, Host: "h", PID: 7,
				Offered: []string{held.ActionRetryNow, held.ActionStop}}}}, nil
		},
		Circuits: func(context.Context) ([]circuit.Record, error) {
			return []circuit.Record{{Key: circuit.Key{Namespace: "default", Provider: "codex-acp", Model: "m", Scope: "provider"},
				OpenUntil: now.Add(time.Hour), OpenedAt: now, Failures: 3, Code: "provider_overloaded", UpdatedAt: now}}, nil
		},
		Live: func(_ context.Context, at time.Time) ([]presence.Record, error) {
			slot := presence.SlotOf(at)
			return []presence.Record{
				{Version: 1, Holder: "h/7/1", Host: "h", PID: 7, Agent: "codex-acp", Model: "gpt-5", State: "retry_wait", Turn: 3, InFlight: 1,
					SessionID: "s<1>", Started: at.Add(-time.Hour), Heartbeat: at.Add(-2 * time.Second), Expires: at.Add(13 * time.Second),
					Errors: []presence.ErrorCount{{Code: "provider_overloaded", Class: "transient", Slot: slot, N: 2},
						{Code: "provider_overloaded", Class: "transient", Slot: slot - 3, N: 1},
						{Code: "rate_limited", Class: "transient", Slot: slot - int64(presence.Slots), N: 9}}}, // left the window
				{Version: 1, Holder: "h/8/1", Host: "h", PID: 8, Agent: "<claude>", State: "idle", Turn: 1,
					Started: at, Heartbeat: at, Expires: at.Add(15 * time.Second),
					Errors: []presence.ErrorCount{{Code: "provider_overloaded", Class: "transient", Slot: slot, N: 1}}},
			}, nil
		},
		Act: func(_ context.Context, a Action) (string, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.asked = append(f.asked, a)
			if a.Hold != 2 {
				return "", errors.New("session has moved on")
			}
			return "retry_wait → retrying", nil
		},
	}
}

func newTestServer(t *testing.T, token string) (*Server, *fakeSource) {
	t.Helper()
	f := &fakeSource{}
	s, err := New(Options{Source: f.source(), Token: token, Store: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return s, f
}

func do(s http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

func TestConsolePage(t *testing.T) {
	s, _ := newTestServer(t, "")
	w := do(s, httptest.NewRequest("GET", "http://127.0.0.1:7171/", nil))
	body := w.Body.String()
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, body)
	}
	for _, want := range []string{"s&lt;1&gt;", "retry now", ">stop<", "in 1m0s", ">open<", "codex-acp", `name="csrf" value="` + s.CSRF() + `"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, ">skip<") {
		t.Errorf("page offers skip, which the holder did not offer")
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP %q", csp)
	}
	if w := do(s, httptest.NewRequest("GET", "http://127.0.0.1:7171/static/console.js", nil)); w.Code != 200 {
		t.Errorf("console.js: %d", w.Code)
	}
}

func TestConsoleActionsAreGuarded(t *testing.T) {
	s, f := newTestServer(t, "")
	post := func(host string, form url.Values, hdr map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "http://"+host+"/act", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		return do(s, r)
	}
	good := url.Values{"csrf": {s.CSRF()}, "action": {"retry_now"}, "session": {"s<1>"}, "holder": {"h/7"}, "hold": {"2"}}
	with := func(k, v string) url.Values {
		f := url.Values{}
		for kk, vv := range good {
			f[kk] = vv
		}
		f.Set(k, v)
		return f
	}
	for _, tt := range []struct {
		name string
		host string
		form url.Values
		hdr  map[string]string
		code int
		msg  string
	}{
		{"no csrf", "127.0.0.1:7171", with("csrf", ""), nil, 403, ""},
		{"wrong csrf", "127.0.0.1:7171", with("csrf", "00"), nil, 403, ""},
		{"cross site", "127.0.0.1:7171", good, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, ""},
		{"other origin", "127.0.0.1:7171", good, map[string]string{"Origin": "http://evil.example"}, 403, ""},
		{"rebound host", "evil.example:7171", good, nil, 421, ""},
		{"unknown action", "127.0.0.1:7171", with("action", "delete"), nil, 400, ""},
		{"moved on", "127.0.0.1:7171", with("hold", "1"), nil, 303, "moved on"},
		{"taken", "127.0.0.1:7171", good, map[string]string{"Origin": "http://127.0.0.1:7171", "Sec-Fetch-Site": "same-origin"}, 303, "retry_wait → retrying"},
	} {
		w := post(tt.host, tt.form, tt.hdr)
		if w.Code != tt.code {
			t.Errorf("%s: status %d, want %d (%s)", tt.name, w.Code, tt.code, w.Body.String())
			continue
		}
		if tt.msg != "" {
			loc, _ := url.Parse(w.Header().Get("Location"))
			if !strings.Contains(loc.Query().Get("msg"), tt.msg) {
				t.Errorf("%s: message %q, want %q", tt.name, loc.Query().Get("msg"), tt.msg)
			}
		}
	}
	if len(f.asked) != 2 {
		t.Errorf("Act called %d times, want 2 (the refused requests never reach it): %+v", len(f.asked), f.asked)
	}
}

func TestConsoleToken(t *testing.T) {
	s, _ := newTestServer(t, "sesame")
	if w := do(s, httptest.NewRequest("GET", "http://10.0.0.5:7171/", nil)); w.Code != 401 {
		t.Errorf("no token: %d, want 401", w.Code)
	}
	r := httptest.NewRequest("GET", "http://10.0.0.5:7171/", nil)
	r.Header.Set("Authorization", "Bearer wrong")
	if w := do(s, r); w.Code != 401 {
		t.Errorf("wrong token: %d, want 401", w.Code)
	}
	r = httptest.NewRequest("GET", "http://10.0.0.5:7171/", nil)
	r.Header.Set("Authorization", "Bearer sesame")
	if w := do(s, r); w.Code != 200 {
		t.Errorf("bearer token: %d, want 200", w.Code)
	}
	w := do(s, httptest.NewRequest("GET", "http://10.0.0.5:7171/?token=sesame", nil))
	if w.Code != 303 || w.Header().Get("Location") != "/" {
		t.Fatalf("?token=: %d to %q, want 303 to /", w.Code, w.Header().Get("Location"))
	}
	c := w.Result().Cookies()
	if len(c) != 1 || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v", c)
	}
	r = httptest.NewRequest("GET", "http://10.0.0.5:7171/state", nil)
	r.AddCookie(c[0])
	if w := do(s, r); w.Code != 200 {
		t.Errorf("cookie: %d, want 200", w.Code)
	}
}

// The live sessions are listed from their presence records, escaped, and
// the last hour's ProviderErrors are counted per agent, code and class —
// a slot that left the hour is not — with one SVG bar per 5 minutes that
// had any.
func TestConsoleLiveSessionsAndErrorChart(t *testing.T) {
	s, _ := newTestServer(t, "")
	w := do(s, httptest.NewRequest("GET", "http://127.0.0.1:7171/state", nil))
	body := w.Body.String()
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, body)
	}
	if n := strings.Count(body, `<tr class="session"`); n != 2 {
		t.Errorf("%d session rows, want 2", n)
	}
	for _, want := range []string{`data-holder="h/7/1" data-state="retry_wait" data-turn="3"`, "&lt;claude&gt;", "<code>h/8</code>", "in 13s",
		`data-agent="codex-acp" data-code="provider_overloaded" data-class="transient" data-n="3"`,
		`data-agent="&lt;claude&gt;" data-code="provider_overloaded" data-class="transient" data-n="1"`,
		`ProviderErrors, last hour <span class="count">4</span>`} {
		if !strings.Contains(body, want) {
			t.Errorf("live part lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "rate_limited") || strings.Contains(body, "<claude>") {
		t.Errorf("an error outside the hour, or an unescaped agent, is on the page")
	}
	if n := strings.Count(body, `<rect class="bar"`); n != 3 {
		t.Errorf("%d bars, want 3 (two slots of codex-acp, one of claude)", n)
	}
	if !strings.Contains(body, `<rect class="bar" x="110" y="0" width="8" height="24">`) {
		t.Errorf("the fullest slot's bar is not full height in the last place:\n%s", body)
	}
}
