package transport_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os/exec"
	"strconv"
	"testing"

	"github.com/acp-guard/acp-guard/internal/testbin"
)

// lineRSS runs acp-guard with --max-line maxLine and an agent that answers
// one request with a line of n bytes, waits for what the client gets
// after it, and returns acp-guard's peak resident set (VmHWM) while it
// still runs.
func lineRSS(t *testing.T, maxLine, n int) int64 {
	prefix, suffix := `{"jsonrpc":"2.0","id":1,"result":{"blob":"`, `"}}`
	const after = `{"jsonrpc":"2.0","method":"x/after","params":{}}`
	g := startGuard(t, []string{"--max-line", strconv.Itoa(maxLine)}, hugeAgent(prefix, n-len(prefix)-len(suffix)-1, suffix, after)...)
	g.send(request(1, "x/big", ""))
	for {
		m := g.msg()
		if m.Method == "x/after" {
			break
		}
	}
	select {
	case <-g.done:
		t.Fatalf("acp-guard exited early; stderr:\n%s", g.stderr.Tail(3000))
	default:
	}
	hwm := vmHWM(t, g.pid()) // the agent waits for EOF, so acp-guard still runs
	g.closeIn()
	g.rest()
	g.wait()
	return hwm
}

// TestE2ELineMemory: a line just over --max-line costs at most 1.5× the
// cap (plus the process's own ~16 MiB), and a line just under it is not
// held in several copies.
func TestE2ELineMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("pushes 64 MiB lines through a pipe")
	}
	const maxLine = 64 * mib
	const base = 24 * mib // the process without any line: runtime, catalogue
	for _, tt := range []struct {
		name string
		n    int
	}{
		{"over the cap", maxLine + 1},
		{"near the cap", maxLine - 4096},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hwm := lineRSS(t, maxLine, tt.n)
			t.Logf("%s: %d-byte line, --max-line %d: acp-guard VmHWM %.1f MiB", tt.name, tt.n, maxLine, float64(hwm)/mib)
			if limit := int64(maxLine)*3/2 + base; hwm > limit {
				t.Errorf("VmHWM %.1f MiB, want ≤ %.1f MiB (1.5 × --max-line + %d MiB)", float64(hwm)/mib, float64(limit)/mib, base/mib)
			}
		})
	}
}

// BenchmarkLineRSS reports acp-guard's peak resident set (VmHWM) for one
// line just over and one just under --max-line 64 MiB, with the process's
// own baseline for comparison (docs/PERFORMANCE.md).
func BenchmarkLineRSS(b *testing.B) {
	const maxLine = 64 * mib
	for _, bc := range []struct {
		name string
		n    int
	}{
		{"baseline", 100},
		{"over-cap", maxLine + 1},
		{"near-cap", maxLine - 4096},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var peak int64
			for range b.N {
				peak = max(peak, lineRSSOnce(b, maxLine, bc.n))
			}
			b.ReportMetric(float64(peak)/mib, "peak-MiB")
			b.ReportMetric(float64(peak)/maxLine, "peak/max-line")
		})
	}
}

// lineRSSOnce is lineRSS without the test harness (benchmarks).
func lineRSSOnce(b *testing.B, maxLine, n int) int64 {
	prefix, suffix := `{"jsonrpc":"2.0","id":1,"result":{"blob":"`, `"}}`
	const after = `{"jsonrpc":"2.0","method":"x/after","params":{}}`
	argv := append([]string{"--max-line", strconv.Itoa(maxLine), "--"}, hugeAgent(prefix, max(n-len(prefix)-len(suffix)-1, 0), suffix, after)...)
	cmd := exec.Command(testbin.Path(b), argv...)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if _, err := io.WriteString(in, request(1, "x/big", "")); err != nil {
		b.Fatal(err)
	}
	br := bufio.NewReaderSize(out, 1<<20)
	for {
		ln, err := br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			b.Fatalf("reading acp-guard: %v", err)
		}
		if bytes.Contains(ln, []byte(`"x/after"`)) {
			break
		}
	}
	hwm := vmHWMOf(b, cmd.Process.Pid)
	in.Close()
	_, _ = io.Copy(io.Discard, br)
	return hwm
}

// clientLineRSS runs acp-guard with --max-line maxLine and an agent that
// reads one line and then says x/after; the client sends line (n bytes of
// method's request, the payload inside params) and waits for x/after (or,
// over the cap, for the error answering it). It returns acp-guard's peak
// resident set (VmHWM) while it still runs.
func clientLineRSS(tb testing.TB, maxLine int, method string, n int) int64 {
	prefix := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"sessionId":"s","prompt":[{"type":"text","text":"`
	suffix := `"}]}}`
	const after = `{"jsonrpc":"2.0","method":"x/after","params":{}}`
	agent := []string{"sh", "-c", `head -n 1 >/dev/null; printf '%s\n' '` + after + `'; exec cat >/dev/null`}
	argv := append([]string{"--max-line", strconv.Itoa(maxLine), "--"}, agent...)
	cmd := exec.Command(testbin.Path(tb), argv...)
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// The writer: it ends when the line is written (or acp-guard is gone).
	go func() {
		w := bufio.NewWriterSize(in, 1<<20)
		_, _ = w.WriteString(prefix)
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for left := max(n-len(prefix)-len(suffix)-1, 0); left > 0; left -= len(chunk) {
			_, _ = w.Write(chunk[:min(left, len(chunk))])
		}
		_, _ = w.WriteString(suffix + "\n")
		_ = w.Flush()
	}()
	br := bufio.NewReaderSize(out, 1<<20)
	for {
		ln, err := br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			tb.Fatalf("reading acp-guard: %v", err)
		}
		if n > maxLine && bytes.Contains(ln, []byte(`"id":1,"error"`)) || bytes.Contains(ln, []byte(`"x/after"`)) {
			break
		}
	}
	hwm := vmHWMOf(tb, cmd.Process.Pid)
	in.Close()
	_, _ = io.Copy(io.Discard, br)
	return hwm
}

// TestE2EClientLineMemory: a client line just over --max-line, and a
// session/prompt just under it (which the guard keeps for a retry), each
// cost at most 1.5× the cap above the process's own ~24 MiB — the prompt
// is held once, not once for the relay and once for the retry.
func TestE2EClientLineMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("pushes 64 MiB lines through a pipe")
	}
	const maxLine = 64 * mib
	const base = 24 * mib
	for _, tt := range []struct {
		name   string
		method string
		n      int
	}{
		{"over the cap", "session/prompt", maxLine + 1},
		{"prompt near the cap", "session/prompt", maxLine - 4096},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hwm := clientLineRSS(t, maxLine, tt.method, tt.n)
			t.Logf("%s: %d-byte %s, --max-line %d: acp-guard VmHWM %.1f MiB", tt.name, tt.n, tt.method, maxLine, float64(hwm)/mib)
			if limit := int64(maxLine)*3/2 + base; hwm > limit {
				t.Errorf("VmHWM %.1f MiB, want ≤ %.1f MiB (1.5 × --max-line + %d MiB)", float64(hwm)/mib, float64(limit)/mib, base/mib)
			}
		})
	}
}

// BenchmarkClientLineRSS reports acp-guard's peak resident set for a
// client line just over --max-line 64 MiB, a session/prompt just under it
// (kept for a retry) and another request just under it, with the
// process's baseline (docs/PERFORMANCE.md).
func BenchmarkClientLineRSS(b *testing.B) {
	const maxLine = 64 * mib
	for _, bc := range []struct {
		name   string
		method string
		n      int
	}{
		{"baseline", "x/ask", 200},
		{"over-cap", "session/prompt", maxLine + 1},
		{"prompt-near-cap", "session/prompt", maxLine - 4096},
		{"request-near-cap", "x/ask", maxLine - 4096},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var peak int64
			for range b.N {
				peak = max(peak, clientLineRSS(b, maxLine, bc.method, bc.n))
			}
			b.ReportMetric(float64(peak)/mib, "peak-MiB")
			b.ReportMetric(float64(peak)/maxLine, "peak/max-line")
		})
	}
}
