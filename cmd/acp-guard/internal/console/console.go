// Package console is the web page of `acp-guard console`: the live
// sessions and the last hour's ProviderErrors from their presence
// records, the prompts held for recovery, with retry-now / skip / stop
// buttons, and the shared circuits, over the stores the sessions use. It owns the HTTP surface
// and its safety — loopback by default, a token otherwise, CSRF-checked
// POSTs, no frame text — and nothing of the actions themselves: those
// come in through Source, the same path `acp-guard held` takes.
//
// The page is server-rendered (html/template); a small embedded script
// polls /state for the live part and replaces it. Without the script the
// page still works: reload to refresh, the buttons are plain forms.
package console

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/held"
	"github.com/acp-guard/acp-guard/presence"
)

//go:embed static page.html.tmpl
var files embed.FS

// Action is an operator's action on one held prompt, as the page posts it.
type Action struct {
	Action  string // held.ActionRetryNow, ActionSkip or ActionStop
	Session string
	Holder  string // host/pid of the holding process
	Hold    uint64 // the hold the page showed: a later one is refused
}

// Source is what the console reads and acts through.
type Source struct {
	Held     func(ctx context.Context) ([]held.Stored, error)
	Circuits func(ctx context.Context) ([]circuit.Record, error)
	// Live lists the sessions whose presence lease runs at now.
	Live func(ctx context.Context, now time.Time) ([]presence.Record, error)
	// Act takes an action and says what came of it ("retry_wait →
	// retrying"); its error is shown to the operator as it is.
	Act func(ctx context.Context, a Action) (string, error)
	Now func() time.Time // nil: time.Now
}

// Options configure a console.
type Options struct {
	Source Source
	// Token, when set, is asked of every request (a bearer header, the
	// cookie the page sets, or ?token= once).
	Token string
	// Poll is how often the page refreshes its live part (default 2s).
	Poll time.Duration
	// Store describes the store, for the page's header.
	Store string
}

// CheckAddr refuses to serve on an address that is not loopback without a
// token: the page can act on held prompts.
func CheckAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if isLoopback(host) || token != "" {
		return nil
	}
	if host == "" {
		host = "every interface"
	}
	return fmt.Errorf("--addr %s listens on %s, not loopback: give --token (anyone who reaches the page can retry, skip or stop held prompts)", addr, host)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Server is the console's HTTP handler.
type Server struct {
	opts  Options
	csrf  string
	page  *template.Template
	mux   *http.ServeMux
	files http.Handler
}

const tokenCookie = "acp_guard_console"

// New returns the console's handler with a fresh CSRF token.
func New(opts Options) (*Server, error) {
	if opts.Poll <= 0 {
		opts.Poll = 2 * time.Second
	}
	if opts.Source.Now == nil {
		opts.Source.Now = time.Now
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	page, err := template.New("page.html.tmpl").Funcs(template.FuncMap{
		"ago":     func(now, t time.Time) string { return since(now, t) },
		"until":   func(now, t time.Time) string { return until(now, t) },
		"stamp":   func(t time.Time) string { return t.UTC().Format("15:04:05Z") },
		"nano":    func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
		"button":  buttonText,
		"offered": func(e held.Entry, a string) bool { return e.Offers(a) },
	}).ParseFS(files, "page.html.tmpl")
	if err != nil {
		return nil, err
	}
	static, err := fs.Sub(files, "static")
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, csrf: hex.EncodeToString(b[:]), page: page, mux: http.NewServeMux(),
		files: http.StripPrefix("/static/", http.FileServerFS(static))}
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("GET /state", s.state)
	s.mux.HandleFunc("POST /act", s.act)
	s.mux.Handle("GET /static/", s.files)
	return s, nil
}

// CSRF returns the process's CSRF token (what the page embeds).
func (s *Server) CSRF() string { return s.csrf }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	if s.opts.Token == "" && !isLoopback(hostOnly(r.Host)) {
		// Loopback without a token: a page reached by another name is
		// DNS rebinding, not the operator.
		http.Error(w, "acp-guard console: this console answers only to localhost names (or give it --token)", http.StatusMisdirectedRequest)
		return
	}
	if s.opts.Token != "" && !s.authorized(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// authorized checks the token: the Authorization header, the cookie, or
// ?token= (which sets the cookie and redirects to the URL without it).
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	same := func(got string) bool { return subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.Token)) == 1 }
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && same(a) {
		return true
	}
	if c, err := r.Cookie(tokenCookie); err == nil && same(c.Value) {
		return true
	}
	if q := r.URL.Query().Get("token"); q != "" && same(q) && r.Method == http.MethodGet {
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: s.opts.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		u := *r.URL
		v := u.Query()
		v.Del("token")
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return false
	}
	http.Error(w, "acp-guard console: a token is required (open the page once as /?token=TOKEN, or send Authorization: Bearer TOKEN)", http.StatusUnauthorized)
	return false
}

// view is what the page's live part shows.
type view struct {
	Now      time.Time
	CSRF     string
	Sessions []presence.Record
	LiveErr  string
	Errors   errorChart
	Held     []held.Entry
	HeldErr  string
	Circuits []circuitRow
	CircErr  string
	Open     int
	Actions  []string
}

type circuitRow struct {
	circuit.Record
	State, Holder string
	Next          time.Time // the cooldown's end: when a probe may go
}

func (s *Server) view(ctx context.Context) view {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	now := s.opts.Source.Now()
	v := view{Now: now, CSRF: s.csrf, Actions: held.Actions}
	if s.opts.Source.Live != nil {
		recs, err := s.opts.Source.Live(ctx, now)
		if err != nil {
			v.LiveErr = err.Error()
		}
		v.Sessions = recs
		v.Errors = chartErrors(recs, now)
	}
	if s.opts.Source.Held != nil {
		list, err := s.opts.Source.Held(ctx)
		if err != nil {
			v.HeldErr = err.Error()
		}
		for _, st := range list {
			v.Held = append(v.Held, st.Entry)
		}
		sort.SliceStable(v.Held, func(i, j int) bool { return v.Held[i].Since.Before(v.Held[j].Since) })
	}
	if s.opts.Source.Circuits != nil {
		recs, err := s.opts.Source.Circuits(ctx)
		if err != nil {
			v.CircErr = err.Error()
		}
		for i := range recs {
			r := recs[i]
			row := circuitRow{Record: r, State: r.StateAt(now)}
			if r.OpenAt(now) {
				row.Next = r.OpenUntil
				v.Open++
			}
			if r.Lease != nil && now.Before(r.Lease.Until) {
				row.Holder = r.Lease.Holder
			}
			v.Circuits = append(v.Circuits, row)
		}
		sort.Slice(v.Circuits, func(i, j int) bool { return v.Circuits[i].Key.String() < v.Circuits[j].Key.String() })
	}
	return v
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	data := struct {
		Live    view
		Poll    int64
		Store   string
		Msg     string
		Refused bool
	}{Live: s.view(r.Context()), Poll: s.opts.Poll.Milliseconds(), Store: s.opts.Store,
		Msg: r.URL.Query().Get("msg"), Refused: r.URL.Query().Get("refused") != ""}
	s.render(w, "page", data)
}

func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	s.render(w, "live", s.view(r.Context()))
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var buf bytes.Buffer
	if err := s.page.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, "acp-guard console: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// act takes an action on a held prompt: a POST from the page, with its
// CSRF token, from this origin.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	if err := s.sameOrigin(r); err != nil {
		http.Error(w, "acp-guard console: "+err.Error(), http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "acp-guard console: "+err.Error(), http.StatusBadRequest)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
		http.Error(w, "acp-guard console: the form's CSRF token is missing or stale (this console restarted?): reload the page", http.StatusForbidden)
		return
	}
	a := Action{Action: r.PostForm.Get("action"), Session: r.PostForm.Get("session"), Holder: r.PostForm.Get("holder")}
	if !slices.Contains(held.Actions, a.Action) || a.Session == "" {
		http.Error(w, "acp-guard console: no such action", http.StatusBadRequest)
		return
	}
	if h := r.PostForm.Get("hold"); h != "" {
		n, err := strconv.ParseUint(h, 10, 64)
		if err != nil {
			http.Error(w, "acp-guard console: bad hold", http.StatusBadRequest)
			return
		}
		a.Hold = n
	}
	q := url.Values{}
	msg, err := s.opts.Source.Act(r.Context(), a)
	if err != nil {
		q.Set("msg", err.Error())
		q.Set("refused", "1")
	} else {
		q.Set("msg", a.Action+" "+a.Session+": "+msg)
	}
	http.Redirect(w, r, "/?"+q.Encode(), http.StatusSeeOther)
}

// sameOrigin refuses a POST that a browser marks as coming from another
// site (Sec-Fetch-Site, else Origin), beside the CSRF token.
func (s *Server) sameOrigin(r *http.Request) error {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return errors.New("cross-site request refused")
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return errors.New("cross-origin request refused")
		}
	}
	return nil
}

func buttonText(a string) string {
	switch a {
	case held.ActionRetryNow:
		return "retry now"
	case held.ActionSkip:
		return "skip"
	case held.ActionStop:
		return "stop"
	}
	return a
}

func since(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

func until(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now)
	if d <= 0 {
		return "due"
	}
	return "in " + d.Round(time.Second).String()
}
