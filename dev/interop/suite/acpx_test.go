//go:build interop

package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	fp "github.com/acp-guard/acp-guard/dev/interop/fakeprovider"
	"github.com/acp-guard/acp-guard/internal/syncio"
)

// acpxCase is one run of acpx, a third-party ACP client, through acp-guard.
type acpxCase struct {
	name      string
	policy    bool
	script    func(w *world) fp.Script
	wantStop  string
	wantCode  string
	wantNote  int
	wantCount func(ac agentCase) int
}

var (
	acpxSuccess = acpxCase{name: "acpx-success", wantStop: "end_turn",
		script: func(*world) fp.Script { return nil }, wantCount: func(agentCase) int { return 1 }}
	acpxAnnotated = acpxCase{name: "acpx-annotated", wantCode: "provider_unavailable",
		script:    func(w *world) fp.Script { return w.script("unavailable_503", -1) },
		wantCount: func(ac agentCase) int { return ac.attempts }}
	acpxRetried = acpxCase{name: "acpx-retried", policy: true, wantStop: "end_turn", wantNote: 1,
		script:    func(w *world) fp.Script { return w.script("unavailable_503", w.ac.attempts) },
		wantCount: func(ac agentCase) int { return ac.attempts + 1 }}
)

// acpx runs `acpx exec` with acp-guard as its agent command.
func (w *world) acpx(c acpxCase) {
	t := w.t
	bin := filepath.Join(w.cache, "node_modules", ".bin", "acpx")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("acpx not installed: %v", err)
	}
	dir, argv, env, _ := w.launch(c.name)
	guard := []string{w.bin, "--grace", "1s", "--state-dir", filepath.Join(dir, "state"),
		"--record", filepath.Join(w.out, c.name+".jsonl"), "--record-overwrite"}
	if c.policy {
		guard = append(guard, "--policy", w.policy)
	}
	agentCmd := strings.Join(append(append(guard, "--"), argv...), " ")
	w.setScript(c.script(w))
	out, code, err := runAcpx(w.ctx, bin, filepath.Join(dir, "work"), env, agentCmd)
	if err != nil {
		w.fatalf("%v", err)
	}
	resp, notes, text := acpxOutcome(out)
	t.Logf("exit %d, requests %d, response %s, text %q", code, w.chatRequests(), resp.Raw, text)
	turn := Turn{Response: resp}
	wantCount := c.wantCount(w.ac)
	if c.policy && w.ac.staleAfterError {
		// acp-guard's retry meets the stale empty end_turn and reports
		// the failure instead.
		w.expectStale(c.name, turn)
		if code == 0 {
			t.Errorf("acpx exit code: got 0, want non-zero for a failed turn")
		}
		w.waitRequests(wantCount)
		return
	}
	if c.wantStop == "end_turn" && text == "" {
		t.Errorf("no text in the answer")
	}
	if got := turn.StopReason(); got != c.wantStop {
		t.Errorf("stopReason: got %q, want %q (exit %d; output tail %s)", got, c.wantStop, code, tail(string(out), 2048))
	}
	if c.wantCode != "" {
		expectError(t, c.name, turn, c.wantCode, "transient")
		if code == 0 {
			t.Errorf("acpx exit code: got 0, want non-zero for a failed turn")
		}
	} else if code != 0 {
		t.Errorf("acpx exit code: got %d, want 0", code)
	}
	if notes != c.wantNote {
		t.Errorf("retry notices: got %d, want %d", notes, c.wantNote)
	}
	if n := w.chatRequests(); n != wantCount {
		t.Errorf("provider requests: got %d, want %d", n, wantCount)
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
		return nil, 0, fmt.Errorf("acpx did not finish: %v; stdout tail %s; stderr tail %s", err, tail(string(lastFrames(c, 12, 400)), 4096), tail(stderr.String(), 2048))
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

// waitUnmarked waits until no process carries mark (polling /proc: a
// process's exit cannot be waited for by a non-parent), at most d.
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
