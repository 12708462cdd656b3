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
