//go:build parsecount

package acpguard_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/internal/jsonscan"
)

// How often the pipeline parses frames (go test -tags parsecount -run
// TestParsesPerTurn -v .): every walk of a frame, or of a span of one, by
// internal/jsonscan, and every encoding/json decode of frame bytes, counted
// through jsonscan.Note. A session's count without its prompt turn is
// subtracted from the count with it, so the figures are the turn's own;
// "failed answer" counts the parses whose input holds the agent's failed
// answer (the frame, a span of it, or the answer acp-guard made of it).
// The demo agent runs in a process of its own, so only acp-guard's parses
// are counted.

type parseCounts struct {
	mu      sync.Mutex
	total   int
	marked  int
	byPkg   map[string]int
	markPkg map[string]int
	marker  string
}

func (c *parseCounts) note(b []byte) {
	pkg := callerPackage()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total++
	c.byPkg[pkg]++
	if c.marker != "" && strings.Contains(string(b), c.marker) {
		c.marked++
		c.markPkg[pkg]++
	}
}

// callerPackage is the package (its last element) of the first caller
// outside internal/jsonscan.
func callerPackage() string {
	pc := make([]uintptr, 16)
	n := runtime.Callers(3, pc)
	frames := runtime.CallersFrames(pc[:n])
	for {
		f, more := frames.Next()
		if !strings.Contains(f.Function, "internal/jsonscan") {
			name := f.Function
			if i := strings.LastIndex(name, "/"); i >= 0 {
				name = name[i+1:]
			}
			if i := strings.Index(name, "."); i >= 0 {
				name = name[:i]
			}
			return name
		}
		if !more {
			return "?"
		}
	}
}

// parseSession runs one guarded session of the demo agent: initialize,
// session/new and, when prompt is set, one prompt turn answered; parses
// are counted while it runs.
func parseSession(t *testing.T, cfg acpguard.Config, agent acpguard.Command, prompt bool, marker string) *parseCounts {
	t.Helper()
	c := &parseCounts{byPkg: map[string]int{}, markPkg: map[string]int{}, marker: marker}
	jsonscan.OnParse = c.note
	defer func() { jsonscan.OnParse = nil }()
	clientIn, toGuard := io.Pipe()
	fromGuard, clientOut := io.Pipe()
	done := make(chan error, 1)
	go func() { // ends when the session does
		_, err := acpguard.Run(context.Background(), cfg, agent, acpguard.Streams{In: clientIn, Out: clientOut})
		clientOut.Close()
		done <- err
	}()
	out := bufio.NewReader(fromGuard)
	await := func(id string) {
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				t.Fatalf("no answer to %s: %v", id, err)
			}
			// An answer (the initialize result's _meta may name a method).
			if strings.HasPrefix(line, `{"jsonrpc":"2.0","id":`+id+`,"result"`) || strings.HasPrefix(line, `{"jsonrpc":"2.0","id":`+id+`,"error"`) {
				return
			}
		}
	}
	io.WriteString(toGuard, initialize)
	await("1")
	io.WriteString(toGuard, newSession)
	await("2")
	if prompt {
		io.WriteString(toGuard, promptTurn)
		await("3")
	}
	toGuard.Close()
	_, _ = io.Copy(io.Discard, out)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParsesPerTurn(t *testing.T) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_METRIC_EXPORT_INTERVAL": "600000"}
	policyPath := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policyPath, []byte(`{"version":1,
"transient":{"retry":{"enabled":true,"max_retries":1,"initial_interval_seconds":1},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"skip"},
"hard":{"retry":{"enabled":false,"max_retries":0,"initial_interval_seconds":0},"wait_for_reset":{"enabled":false,"max_wait_seconds":0},"on_exhausted":"stop"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The first session loads the catalogue, once per process: not a turn's work.
	parseSession(t, acpguard.Config{StateDir: t.TempDir()}, demoAgent("success"), true, "")
	// answers is how many failed answers the agent sends in the turn: each
	// is parsed once by the relay (transport), once by the guard, and by
	// the classifier — by nothing else.
	for _, tt := range []struct {
		name, scenario, marker string
		recover                bool
		answers                int
	}{
		{name: "success", scenario: "success"},
		{name: "failed answer, annotated", scenario: "claude-error", marker: "req_demo_529", answers: 1},
		{name: "retry and fallback", scenario: "fail-model", marker: "req_demo_529", recover: true, answers: 2},
	} {
		for _, otel := range []bool{false, true} {
			cfg := acpguard.Config{StateDir: t.TempDir(), Circuits: "off"}
			if tt.recover {
				cfg.PolicyFile, cfg.Fallback = policyPath, []string{"model-b"}
			}
			if otel {
				cfg.Getenv = func(k string) string { return env[k] }
			}
			agent := demoAgent(tt.scenario)
			agent.Argv = append(agent.Argv, "--agent-name", "@zed-industries/claude-agent-acp")
			base := parseSession(t, cfg, agent, false, tt.marker)
			with := parseSession(t, cfg, agent, true, tt.marker)
			var pkgs []string
			for p, n := range with.byPkg {
				if d := n - base.byPkg[p]; d != 0 {
					pkgs = append(pkgs, p+" "+itoa(d))
				}
			}
			sort.Strings(pkgs)
			var marked []string
			for p, n := range with.markPkg {
				marked = append(marked, p+" "+itoa(n))
			}
			sort.Strings(marked)
			t.Logf("%-26s otel=%-5v parses in the turn: %3d (%s); of the failed answer: %d (%s)",
				tt.name, otel, with.total-base.total, strings.Join(pkgs, ", "), with.marked, strings.Join(marked, ", "))
			for pkg, n := range with.markPkg {
				want := 0 // nothing else reads a failed answer: telemetry gets it with the events
				switch pkg {
				case "classify":
					continue // the classifier's own reading of error.data
				case "transport", "guard":
					want = tt.answers // the relay's frame parse, the guard's decode
				}
				if n != want {
					t.Errorf("%s, otel=%v: %s parsed the failed answers %d times, want %d", tt.name, otel, pkg, n, want)
				}
			}
		}
	}
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
