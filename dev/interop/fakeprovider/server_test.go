package fakeprovider

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

type sse struct{ name, data string }

// readSSE reads events until the body ends; err is the read error, if any.
func readSSE(t *testing.T, body io.Reader) ([]sse, error) {
	t.Helper()
	var evs []sse
	var cur sse
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case line == "":
			evs = append(evs, cur)
			cur = sse{}
		}
	}
	return evs, sc.Err()
}

func start(t *testing.T, sc Script) *Server {
	t.Helper()
	s, err := Start(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// request describes one API call of each wire format.
type request struct {
	name, path, body, route string
}

var streamRequests = []request{
	{"openai", "/v1/responses", `{"model":"gpt-5","stream":true}`, RouteResponses},
	{"anthropic", "/v1/messages", `{"model":"claude-x","stream":true}`, RouteMessages},
	{"gemini", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", `{}`, RouteStreamGenerate},
}

// textOf extracts the assistant text of one event of any format.
func textOf(t *testing.T, e sse) string {
	t.Helper()
	var v struct {
		Delta      json.RawMessage `json:"delta"`
		Candidates []struct {
			Content struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(e.data), &v); err != nil {
		t.Fatalf("event %q: data %q: %v", e.name, e.data, err)
	}
	var s string
	if json.Unmarshal(v.Delta, &s) == nil && e.name == "response.output_text.delta" {
		return s
	}
	var d struct{ Type, Text string }
	if json.Unmarshal(v.Delta, &d) == nil && d.Type == "text_delta" {
		return d.Text
	}
	for _, c := range v.Candidates {
		for _, p := range c.Content.Parts {
			s += p.Text
		}
	}
	return s
}

func TestStreamSuccess(t *testing.T) {
	for _, tt := range []struct {
		req       request
		wantFirst string
		wantLast  string
	}{
		{streamRequests[0], "response.created", "response.completed"},
		{streamRequests[1], "message_start", "message_stop"},
		{streamRequests[2], "", ""},
	} {
		t.Run(tt.req.name, func(t *testing.T) {
			s := start(t, Script{tt.req.route: {{Text: "one two three four five six seven"}}})
			resp := post(t, s.URL+tt.req.path, tt.req.body)
			if got, want := resp.StatusCode, 200; got != want {
				t.Fatalf("status: got %d, want %d", got, want)
			}
			if got, want := resp.Header.Get("Content-Type"), "text/event-stream"; got != want {
				t.Errorf("content type: got %q, want %q", got, want)
			}
			evs, err := readSSE(t, resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if got := evs[0].name; got != tt.wantFirst {
				t.Errorf("first event: got %q, want %q", got, tt.wantFirst)
			}
			if got := evs[len(evs)-1].name; got != tt.wantLast {
				t.Errorf("last event: got %q, want %q", got, tt.wantLast)
			}
			var text string
			for _, e := range evs {
				text += textOf(t, e)
			}
			if got, want := text, "one two three four five six seven"; got != want {
				t.Errorf("text: got %q, want %q", got, want)
			}
			if got, want := s.Count(tt.req.route), 1; got != want {
				t.Errorf("count: got %d, want %d", got, want)
			}
		})
	}
}

func TestGeminiLastChunkHasFinishReason(t *testing.T) {
	s := start(t, nil)
	resp := post(t, s.URL+streamRequests[2].path, `{}`)
	evs, err := readSSE(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		got := strings.Contains(e.data, `"finishReason":"STOP"`)
		if want := i == len(evs)-1; got != want {
			t.Errorf("event %d: finishReason present: got %t, want %t", i, got, want)
		}
	}
}

func TestFailThenSucceed(t *testing.T) {
	s := start(t, Script{RouteResponses: {
		{Times: 2, Status: 429, Headers: map[string]string{"Retry-After": "7"},
			Body: json.RawMessage(`{"error":{"type":"rate_limit_exceeded","message":"slow down"}}`)},
		{Status: 503, Body: json.RawMessage(`"upstream connect error"`)},
	}})
	type answer struct {
		status     int
		retryAfter string
		body       string
	}
	var got []answer
	for range 4 {
		resp := post(t, s.URL+"/v1/responses", `{"model":"gpt-5","stream":false}`)
		b, _ := io.ReadAll(resp.Body)
		got = append(got, answer{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)})
	}
	want := []answer{
		{429, "7", `{"error":{"type":"rate_limit_exceeded","message":"slow down"}}`},
		{429, "7", `{"error":{"type":"rate_limit_exceeded","message":"slow down"}}`},
		{503, "", "upstream connect error"},
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("request %d: got %+v, want %+v", i, got[i], w)
		}
	}
	if got[3].status != 200 || !strings.Contains(got[3].body, DefaultText) {
		t.Errorf("request 3 after the script: got %+v, want a 200 success with the default text", got[3])
	}
	st := s.Stats()
	if got, want := st.Total, 4; got != want {
		t.Errorf("total: got %d, want %d", got, want)
	}
	var steps []string
	for _, r := range st.Requests {
		steps = append(steps, r.Step)
	}
	if got, want := strings.Join(steps, ","), "responses[0],responses[0],responses[1],default"; got != want {
		t.Errorf("steps: got %s, want %s", got, want)
	}
}

func TestTimesForever(t *testing.T) {
	s := start(t, Script{"*": {{Times: -1, Status: 500, Body: json.RawMessage(`{}`)}}})
	for i := range 5 {
		if got := post(t, s.URL+"/v1/messages", `{"model":"m"}`).StatusCode; got != 500 {
			t.Fatalf("request %d: got %d, want 500", i, got)
		}
	}
}

func TestKeyPrecedence(t *testing.T) {
	s := start(t, Script{
		"generateContent@flash": {Fail(-1, 503, `{"error":{"code":503}}`)},
		"generateContent":       {Fail(-1, 500, `{"error":{"code":500}}`)},
		"*":                     {Fail(-1, 418, `{}`)},
	})
	for _, tt := range []struct {
		path string
		want int
	}{
		{"/v1beta/models/flash:generateContent", 503},
		{"/v1beta/models/pro:generateContent", 500},
		{"/v1beta/models/pro:countTokens", 418},
	} {
		if got := post(t, s.URL+tt.path, `{}`).StatusCode; got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.path, got, tt.want)
		}
	}
	if got, want := s.Count("generateContent@flash"), 1; got != want {
		t.Errorf("count generateContent@flash: got %d, want %d", got, want)
	}
	if got, want := s.Count(RouteGenerate), 2; got != want {
		t.Errorf("count generateContent: got %d, want %d", got, want)
	}
}

func TestCutStreams(t *testing.T) {
	errOpenAI := json.RawMessage(`{"type":"response.failed","response":{"error":{"code":"server_error","message":"boom"}}}`)
	errAnthropic := json.RawMessage(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	errGemini := json.RawMessage(`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`)
	two := 2
	for _, tt := range []struct {
		name     string
		req      request
		step     Step
		wantText string
		wantLast string // name of the last event ("" for none/unnamed)
		wantErr  bool   // broken body
		wantN    int    // events seen, -1 to skip
	}{
		{"openai drop before text", streamRequests[0], Step{Cut: CutBeforeText}, "", "response.content_part.added", true, 4},
		{"openai drop after text", streamRequests[0], Step{Cut: CutAfterText}, DefaultText, "response.output_text.delta", true, -1},
		{"openai error after text", streamRequests[0], Step{Cut: CutAfterText, Then: ThenError, Error: errOpenAI}, DefaultText, "response.failed", false, -1},
		{"openai end after two", streamRequests[0], Step{Events: &two, Then: ThenEnd}, "", "response.in_progress", false, 2},
		{"anthropic error before text", streamRequests[1], Step{Cut: CutBeforeText, Then: ThenError, Error: errAnthropic}, "", "error", false, 4},
		{"anthropic drop after text", streamRequests[1], Step{Cut: CutAfterText}, DefaultText, "content_block_delta", true, -1},
		{"gemini drop before text", streamRequests[2], Step{Cut: CutBeforeText}, "", "", true, 0},
		{"gemini error after text", streamRequests[2], Step{Cut: CutAfterText, Then: ThenError, Error: errGemini}, "Hello from the fake ", "", false, 3},
		{"gemini stall then rest", streamRequests[2], Step{Cut: CutAfterText, Then: ThenStall, StallFor: Duration(time.Millisecond)}, DefaultText, "", false, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, Script{tt.req.route: {tt.step}})
			resp := post(t, s.URL+tt.req.path, tt.req.body)
			evs, err := readSSE(t, resp.Body)
			if got := err != nil; got != tt.wantErr {
				t.Fatalf("broken body: got %t (%v), want %t", got, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("read error: got %v, want unexpected EOF", err)
			}
			var text string
			for _, e := range evs {
				if !strings.Contains(e.data, `"error"`) || strings.Contains(e.name, "delta") {
					text += textOf(t, e)
				}
			}
			if text != tt.wantText {
				t.Errorf("text: got %q, want %q", text, tt.wantText)
			}
			if tt.wantN >= 0 && len(evs) != tt.wantN {
				t.Errorf("events: got %d, want %d", len(evs), tt.wantN)
			}
			last := ""
			if len(evs) > 0 {
				last = evs[len(evs)-1].name
			}
			if last != tt.wantLast {
				t.Errorf("last event: got %q, want %q", last, tt.wantLast)
			}
			if tt.step.Then == ThenError && (len(evs) == 0 || evs[len(evs)-1].data != string(compact(tt.step.Error))) {
				t.Errorf("error event: got %+v, want data %s", evs, tt.step.Error)
			}
		})
	}
}

func TestStallUntilClientLeaves(t *testing.T) {
	s := start(t, Script{RouteMessages: {{Cut: CutAfterText, Then: ThenStall}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/messages", strings.NewReader(`{"model":"m","stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	// Read through the last text delta; the stall follows.
	for seen := 0; seen < 3; {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "event: content_block_delta") {
			seen++
		}
	}
	cancel()
	if _, err := io.ReadAll(r); err == nil {
		t.Fatal("read after cancel: got nil error, want the cancellation")
	}
	// Close returns only after the stalled handler has seen the client leave.
	s.Close()
	st := s.Stats()
	if got, want := len(st.Requests), 1; got != want {
		t.Fatalf("requests: got %d, want %d", got, want)
	}
	if got, want := st.Requests[0].Status, 499; got != want {
		t.Errorf("recorded status: got %d, want %d", got, want)
	}
}

func TestPlainAnswers(t *testing.T) {
	s := start(t, nil)
	for _, tt := range []struct {
		method, path, body string
		wantStatus         int
		wantIn             string
	}{
		{"POST", "/v1/responses", `{"model":"gpt-5"}`, 200, `"status":"completed"`},
		{"GET", "/v1/models", ``, 200, `"gpt-5"`},
		{"POST", "/v1/messages", `{"model":"claude-x"}`, 200, `"stop_reason":"end_turn"`},
		{"POST", "/v1/messages/count_tokens", `{"model":"claude-x"}`, 200, `"input_tokens":12`},
		{"POST", "/v1beta/models/gemini-2.5-pro:generateContent", `{}`, 200, `"finishReason":"STOP"`},
		{"POST", "/v1beta/models/gemini-2.5-pro:countTokens", `{}`, 200, `"totalTokens":12`},
		{"GET", "/v1beta/models", ``, 200, `models/gemini-2.5-pro`},
		{"POST", "/v1/chat/completions", `{"model":"gpt-5"}`, 200, `"object":"chat.completion"`},
		{"GET", "/elsewhere", ``, 404, `no such endpoint`},
	} {
		req, _ := http.NewRequest(tt.method, s.URL+tt.path, strings.NewReader(tt.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.wantStatus || !strings.Contains(string(b), tt.wantIn) {
			t.Errorf("%s %s: got %d %s, want %d containing %s", tt.method, tt.path, resp.StatusCode, b, tt.wantStatus, tt.wantIn)
		}
	}
	st := s.Stats()
	if got, want := st.Routes[RouteOther], 1; got != want {
		t.Errorf("other: got %d, want %d", got, want)
	}
	if got, want := st.Models["responses@gpt-5"], 1; got != want {
		t.Errorf("responses@gpt-5: got %d, want %d", got, want)
	}
}

func TestControlEndpoints(t *testing.T) {
	s := start(t, nil)
	if got := post(t, s.URL+"/_fake/script", `{"messages":[{"then":"explode"}]}`); got.StatusCode != 400 {
		t.Errorf("bad script: got %d, want 400", got.StatusCode)
	} else if b, _ := io.ReadAll(got.Body); !strings.Contains(string(b), "messages[0]") {
		t.Errorf("bad script error: got %s, want it to name messages[0]", b)
	}
	if got := post(t, s.URL+"/_fake/script", `{"messages":[{"status":529,"body":{"type":"error"}}]}`); got.StatusCode != 200 {
		t.Fatalf("good script: got %d, want 200", got.StatusCode)
	}
	if got := post(t, s.URL+"/v1/messages", `{"model":"m"}`).StatusCode; got != 529 {
		t.Errorf("scripted answer: got %d, want 529", got)
	}
	resp, err := http.Get(s.URL + "/_fake/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := st.Routes[RouteMessages], 1; got != want {
		t.Errorf("stats messages: got %d, want %d", got, want)
	}
	post(t, s.URL+"/_fake/reset", ``)
	if got := s.Stats().Total; got != 0 {
		t.Errorf("total after reset: got %d, want 0", got)
	}
}

func TestParseScript(t *testing.T) {
	for _, tt := range []struct {
		in      string
		wantErr string
	}{
		{`{"responses":[{"times":2,"status":429,"delay":"1s","stall_for":250}]}`, ""},
		{`{"responses":[{"then":"explode"}]}`, `responses[0]: then: unknown value "explode"`},
		{`{"responses":[{"cut":"middle"}]}`, `cut: unknown value "middle"`},
		{`{"responses":[{"cut":"before_text","events":1}]}`, `exclusive`},
		{`{"responses":[{"then":"error"}]}`, `then=error needs error`},
		{`{"responses":[{"status":42}]}`, `not an HTTP status`},
		{`{"responses":[{"times":-2}]}`, `below -1`},
		{`{"responses":[{"events":-1}]}`, `negative`},
		{`{"responses":[{"delay":"soon"}]}`, `parse script`},
		{`{"responses":[{"colour":"red"}]}`, `unknown field`},
	} {
		sc, err := ParseScript([]byte(tt.in))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: got error %v, want none", tt.in, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: got error %v, want one containing %q", tt.in, err, tt.wantErr)
		case tt.wantErr == "":
			st := sc[RouteResponses][0]
			if time.Duration(st.Delay) != time.Second || time.Duration(st.StallFor) != 250*time.Millisecond {
				t.Errorf("durations: got %v %v, want 1s 250ms", time.Duration(st.Delay), time.Duration(st.StallFor))
			}
		}
	}
}

func TestStartRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "example.com:80"} {
		if s, err := StartAddr(addr, nil, nil); err == nil {
			s.Close()
			t.Errorf("%s: got no error, want a refusal", addr)
		}
	}
}

func TestRequestLog(t *testing.T) {
	var b strings.Builder
	s, err := Start(nil, &syncWriter{w: &b})
	if err != nil {
		t.Fatal(err)
	}
	post(t, s.URL+"/v1/responses", `{"model":"gpt-5","stream":true}`)
	s.Close()
	want := "fakeprovider: seq=1 POST /v1/responses route=responses model=gpt-5 stream=true status=200 step=default\n"
	if got := b.String(); got != want {
		t.Errorf("log: got %q, want %q", got, want)
	}
}

// The Chat Completions stream: role chunk, content deltas, a finish chunk
// with usage, then [DONE]; cut before text it carries no content.
func TestChatCompletionsStream(t *testing.T) {
	for _, tt := range []struct {
		script  string
		want    []string
		notWant string
	}{
		{`{"chat":[{"times":-1,"text":"one two three four"}]}`, []string{`"role":"assistant"`, `"content":"one `, `"finish_reason":"stop"`, "data: [DONE]"}, ""},
		{`{"chat":[{"times":-1,"cut":"before_text","then":"end"}]}`, []string{`"role":"assistant"`}, `"content":"Hello`},
	} {
		sc, err := ParseScript([]byte(tt.script))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Start(sc, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		s.Close()
		for _, w := range tt.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: stream lacks %s:\n%s", tt.script, w, b)
			}
		}
		if tt.notWant != "" && strings.Contains(string(b), tt.notWant) {
			t.Errorf("%s: stream has %s:\n%s", tt.script, tt.notWant, b)
		}
	}
}

func TestWaitCount(t *testing.T) {
	s := start(t, Script{"*": {{Times: -1, Status: 500, Body: json.RawMessage(`{}`)}}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := s.WaitCount(ctx, RouteMessages, 1); err == nil || n != 0 {
		t.Fatalf("before any request: got %d, %v; want 0 and the context's error", n, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.WaitCount(context.Background(), RouteMessages, 2)
		done <- err
	}()
	post(t, s.URL+"/v1/messages", `{"model":"m"}`).Body.Close()
	post(t, s.URL+"/v1/messages", `{"model":"m"}`).Body.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, err := s.WaitCount(context.Background(), RouteMessages+"@m", 2); err != nil || n != 2 {
		t.Errorf("by model: got %d, %v; want 2", n, err)
	}
}
