package fakeprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Route names (see the package documentation).
const (
	RouteResponses       = "responses"
	RouteChat            = "chat"
	RouteModels          = "models"
	RouteMessages        = "messages"
	RouteCountTokens     = "count_tokens"
	RouteStreamGenerate  = "streamGenerateContent"
	RouteGenerate        = "generateContent"
	RouteGeminiCount     = "countTokens"
	RouteOther           = "other"
	maxRequestBody       = 64 << 20
	defaultStepReference = "default"
)

// Request is one request the server saw.
type Request struct {
	Seq    int    `json:"seq"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Route  string `json:"route"`
	Model  string `json:"model,omitempty"`
	Stream bool   `json:"stream,omitempty"`
	Status int    `json:"status"`
	Step   string `json:"step"` // "key[i]" of the script step, or "default"
}

// Stats counts requests per route and per "route@model".
type Stats struct {
	Total    int            `json:"total"`
	Routes   map[string]int `json:"routes"`
	Models   map[string]int `json:"models"`
	Requests []Request      `json:"requests"`
}

// Server is a running fake provider. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL, "http://127.0.0.1:PORT", without a trailing slash.
	URL string

	log  io.Writer
	srv  *http.Server
	ln   net.Listener
	done chan struct{}  // closed when Serve returns
	busy sync.WaitGroup // handlers in flight; Close waits for them

	mu      sync.Mutex
	counted chan struct{} // closed and replaced whenever a request is counted
	script  Script
	pos     map[string]int // index of the head step per key, for reporting
	used    map[string]int // requests answered by the head step per key
	stats   Stats
}

// Start listens on 127.0.0.1:0 and serves script. Request log lines go to
// logw (nil discards them). Close stops the server.
func Start(script Script, logw io.Writer) (*Server, error) {
	return StartAddr("127.0.0.1:0", script, logw)
}

// StartAddr is Start on a given loopback address ("127.0.0.1:8080").
func StartAddr(addr string, script Script, logw io.Writer) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("fakeprovider: address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("fakeprovider: address %q: only loopback addresses are allowed", addr)
	}
	if err := script.Validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakeprovider: listen: %w", err)
	}
	if logw == nil {
		logw = io.Discard
	}
	s := &Server{
		URL:  "http://" + ln.Addr().String(),
		log:  logw,
		ln:   ln,
		done: make(chan struct{}),
	}
	s.setScript(script)
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	// The serving goroutine exits when Close shuts the server down; Close
	// waits for it through s.done.
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Close stops the server, aborting requests in flight (stalls included),
// and returns after every handler has finished and logged its request.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	s.busy.Wait()
	return err
}

// SetScript replaces the script and rewinds every queue. Counters stay.
func (s *Server) SetScript(script Script) error {
	if err := script.Validate(); err != nil {
		return err
	}
	s.setScript(script)
	return nil
}

func (s *Server) setScript(script Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = script.clone()
	s.pos = map[string]int{}
	s.used = map[string]int{}
}

// Stats returns a copy of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := Stats{Total: s.stats.Total, Routes: map[string]int{}, Models: map[string]int{}}
	for k, v := range s.stats.Routes {
		c.Routes[k] = v
	}
	for k, v := range s.stats.Models {
		c.Models[k] = v
	}
	c.Requests = append([]Request{}, s.stats.Requests...)
	return c
}

// Count returns how many requests a route (or "route@model") received.
func (s *Server) Count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.countLocked(key)
}

func (s *Server) countLocked(key string) int {
	if strings.Contains(key, "@") {
		return s.stats.Models[key]
	}
	return s.stats.Routes[key]
}

// WaitCount waits until a route (or "route@model") has received at least
// n requests and returns the count, or the context's error with the count
// so far.
func (s *Server) WaitCount(ctx context.Context, key string, n int) (int, error) {
	for {
		s.mu.Lock()
		got := s.countLocked(key)
		if s.counted == nil {
			s.counted = make(chan struct{})
		}
		ch := s.counted
		s.mu.Unlock()
		if got >= n {
			return got, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return got, ctx.Err()
		}
	}
}

// ResetStats clears the counters.
func (s *Server) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats = Stats{}
}

// next takes the step for route and model and records the request.
func (s *Server) next(r *Request) Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	step, ref := Step{}, defaultStepReference
	for _, key := range []string{r.Route + "@" + r.Model, r.Route, "*"} {
		q := s.script[key]
		if len(q) == 0 {
			continue
		}
		step = q[0]
		ref = fmt.Sprintf("%s[%d]", key, s.pos[key])
		s.used[key]++
		times := step.Times
		if times == 0 {
			times = 1
		}
		if times > 0 && s.used[key] >= times {
			s.script[key] = q[1:]
			s.pos[key]++
			s.used[key] = 0
		}
		break
	}
	if s.stats.Routes == nil {
		s.stats.Routes, s.stats.Models = map[string]int{}, map[string]int{}
	}
	s.stats.Total++
	r.Seq = s.stats.Total
	r.Step = ref
	s.stats.Routes[r.Route]++
	if r.Model != "" {
		s.stats.Models[r.Route+"@"+r.Model]++
	}
	if s.counted != nil {
		close(s.counted)
		s.counted = nil
	}
	return step
}

func (s *Server) finish(r Request) {
	s.mu.Lock()
	s.stats.Requests = append(s.stats.Requests, r)
	s.mu.Unlock()
	fmt.Fprintf(s.log, "fakeprovider: seq=%d %s %s route=%s model=%s stream=%t status=%d step=%s\n",
		r.Seq, r.Method, r.Path, r.Route, r.Model, r.Stream, r.Status, r.Step)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.busy.Add(1)
	defer s.busy.Done()
	switch r.URL.Path {
	case "/_fake/stats":
		writeJSON(w, http.StatusOK, s.Stats())
		return
	case "/_fake/reset":
		s.ResetStats()
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
		return
	case "/_fake/script":
		s.serveScript(w, r)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	req := Request{Method: r.Method, Path: r.URL.Path}
	api, model := classify(r, body, &req)
	step := s.next(&req)
	defer func() { s.finish(req) }()

	if step.Delay > 0 && !sleep(r.Context(), time.Duration(step.Delay)) {
		req.Status = 499
		return
	}
	for k, v := range step.Headers {
		w.Header().Set(k, v)
	}
	if step.plain() {
		req.Status = step.Status
		if req.Status == 0 {
			req.Status = http.StatusOK
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(req.Status)
		_, _ = w.Write(step.bodyBytes())
		return
	}
	text := step.Text
	if text == "" && !step.Empty {
		text = DefaultText
	}
	switch {
	case api == nil:
		req.Status = http.StatusNotFound
		writeJSON(w, req.Status, map[string]any{"error": map[string]any{
			"code": 404, "message": "fakeprovider: no such endpoint " + r.URL.Path, "status": "NOT_FOUND"}})
	case !req.Stream:
		req.Status = http.StatusOK
		writeJSON(w, req.Status, api.plain(req.Route, model, text))
	default:
		req.Status = http.StatusOK // stays recorded when the stream is dropped
		req.Status = s.stream(w, r, api, model, text, step)
	}
}

func (s *Server) serveScript(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "POST a script"})
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err == nil {
		var sc Script
		if sc, err = ParseScript(data); err == nil {
			err = s.SetScript(sc)
		}
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// stream sends the success stream of api, cut and finished as step says.
// It returns the status to record (499 when the client left during a stall).
func (s *Server) stream(w http.ResponseWriter, r *http.Request, a api, model, text string, step Step) int {
	evs, firstText, afterText := a.stream(model, text)
	n := len(evs)
	cut := step.Events != nil || step.Cut != ""
	switch {
	case step.Events != nil:
		n = min(*step.Events, len(evs))
	case step.Cut == CutBeforeText:
		n = firstText
	case step.Cut == CutAfterText:
		n = afterText
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush() // the client sees the 200 even if nothing follows
	}
	send := func(e event) {
		if e.name != "" {
			fmt.Fprintf(w, "event: %s\n", e.name)
		}
		fmt.Fprintf(w, "data: %s\n\n", e.data)
		if flusher != nil {
			flusher.Flush()
		}
	}
	for _, e := range evs[:n] {
		send(e)
	}
	if !cut {
		return http.StatusOK
	}
	switch step.Then {
	case ThenEnd:
	case ThenError:
		send(errorEvent(step.Error))
	case ThenStall:
		if !sleep(r.Context(), time.Duration(step.StallFor)) {
			return 499
		}
		for _, e := range evs[n:] {
			send(e)
		}
	default: // drop
		// ErrAbortHandler makes net/http close the connection without
		// terminating the chunked body: the client sees a broken stream.
		// finish still runs from the deferred call in ServeHTTP.
		panic(http.ErrAbortHandler)
	}
	return http.StatusOK
}

// sleep waits d (forever when d is 0) or until ctx ends; it reports whether
// the whole wait elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		<-ctx.Done()
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// event is one server-sent event.
type event struct {
	name string
	data []byte
}

func errorEvent(data json.RawMessage) event {
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(data, &head)
	return event{name: head.Type, data: compact(data)}
}

func compact(data []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return data
	}
	return buf.Bytes()
}

// api is one provider wire format.
type api interface {
	// stream returns the success stream and the index of its first text
	// event and the index just after its last text event.
	stream(model, text string) (evs []event, firstText, afterText int)
	// plain returns the non-streaming answer for a route.
	plain(route, model, text string) any
}

// classify fills route, model and stream of req and returns the wire format.
func classify(r *http.Request, body []byte, req *Request) (api, string) {
	var head struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal(body, &head)
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/responses"):
		req.Route, req.Model, req.Stream = RouteResponses, head.Model, head.Stream
		return openAI{}, head.Model
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/chat/completions"):
		req.Route, req.Model, req.Stream = RouteChat, head.Model, head.Stream
		return openAIChat{}, head.Model
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages/count_tokens"):
		req.Route, req.Model = RouteCountTokens, head.Model
		return anthropic{}, head.Model
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages"):
		req.Route, req.Model, req.Stream = RouteMessages, head.Model, head.Stream
		return anthropic{}, head.Model
	case r.Method == http.MethodPost && strings.Contains(p, "/models/") && strings.Contains(p, ":"):
		i := strings.LastIndex(p, "/models/")
		model, method, _ := strings.Cut(p[i+len("/models/"):], ":")
		req.Model = model
		switch method {
		case "streamGenerateContent":
			req.Route, req.Stream = RouteStreamGenerate, true
		case "generateContent":
			req.Route = RouteGenerate
		case "countTokens":
			req.Route = RouteGeminiCount
		default:
			req.Route = RouteOther
			return nil, model
		}
		return gemini{}, model
	case r.Method == http.MethodGet && strings.HasSuffix(p, "/models"):
		req.Route = RouteModels
		if strings.Contains(p, "/v1beta/") || strings.Contains(p, "/v1alpha/") {
			return gemini{}, ""
		}
		return openAI{}, ""
	}
	req.Route = RouteOther
	return nil, ""
}
