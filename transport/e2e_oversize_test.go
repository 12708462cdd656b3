package transport_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/internal/acptest"
)

const mib = 1 << 20

// hugeAgent is a shell agent that reads one request, prints prefix, n
// bytes of 'a' and suffix as one line, then each of after, and then
// consumes stdin until EOF.
func hugeAgent(prefix string, n int, suffix string, after ...string) []string {
	script := fmt.Sprintf(`read -r req; printf '%%s' '%s'; head -c %d /dev/zero | tr '\0' a; printf '%%s\n' '%s'`, prefix, n, suffix)
	for _, a := range after {
		script += fmt.Sprintf(`; printf '%%s\n' '%s'`, a)
	}
	// cat keeps stdout open: an agent that closes it while running has
	// its requests answered and is terminated (TestE2EAgentClosesStdout).
	return []string{"sh", "-c", script + "; exec cat"}
}

// TestE2EOversizeAgentLine: a line over --max-line is discarded without
// stopping the relay; a discarded response still answers its request, once.
func TestE2EOversizeAgentLine(t *testing.T) {
	const after = `{"jsonrpc":"2.0","method":"x/after","params":{}}`
	const huge = 5 * mib
	for _, tt := range []struct {
		name           string
		prefix, suffix string
		after          []string
		wantErrorFor   string // id of the request answered with an error; "" none
		logLevel       string // "" info
	}{
		{
			name:   "response, id before the payload",
			prefix: `{"jsonrpc":"2.0","id":1,"result":{"blob":"`, suffix: `"}}`,
			after:        []string{after},
			wantErrorFor: "1",
		},
		{
			name:   "response, id after the payload",
			prefix: `{"jsonrpc":"2.0","result":{"blob":"`, suffix: `"},"id":1}`,
			after:        []string{after},
			wantErrorFor: "1",
		},
		{
			name:   "notification, then the real answer",
			prefix: `{"jsonrpc":"2.0","method":"session/update","params":{"blob":"`, suffix: `"}}`,
			after: []string{`{"jsonrpc":"2.0","id":1,"result":{}}`, after},
		},
		{
			name:   "not JSON",
			prefix: `garbage `, suffix: ``,
			after:    []string{`{"jsonrpc":"2.0","id":1,"result":{}}`, after},
			logLevel: "warn",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			flags := []string{"--max-line", strconv.Itoa(mib)}
			if tt.logLevel != "" {
				flags = append(flags, "--log-level", tt.logLevel)
			}
			g := startGuard(t, flags, hugeAgent(tt.prefix, huge, tt.suffix, tt.after...)...)
			g.Send(acptest.Request(1, "x/big", ""))
			var msgs []acptest.Frame
			if tt.wantErrorFor != "" {
				m := g.Next()
				msgs = append(msgs, m)
				if string(m.ID) != tt.wantErrorFor || m.Error == nil {
					t.Fatalf("first frame %s, want an error for id %s", acptest.Trunc(m.Raw, 300), tt.wantErrorFor)
				}
				for _, want := range []string{"exceeds the line cap", "--max-line 1048576"} {
					if !strings.Contains(m.Error.Message, want) {
						t.Errorf("error message %q does not say %q", m.Error.Message, want)
					}
				}
				var data struct {
					AcpGuard struct {
						Reason  string
						Bytes   int64
						MaxLine int64
					}
				}
				if err := json.Unmarshal(m.Error.Data, &data); err != nil {
					t.Fatalf("error data %s: %v", m.Error.Data, err)
				}
				if data.AcpGuard.Reason != "line_too_long" || data.AcpGuard.Bytes < huge || data.AcpGuard.MaxLine != mib {
					t.Errorf("error data %s: want reason line_too_long, bytes ≥ %d, maxLine %d", m.Error.Data, huge, mib)
				}
			}
			// The frames after the huge line arrive unchanged.
			for _, want := range tt.after {
				if got := g.Line(); string(got) != want+"\n" {
					t.Fatalf("got %q, want %q", acptest.Trunc(got, 300), want+"\n")
				}
			}
			g.CloseStdin()
			msgs = append(msgs, g.Rest()...)
			if code := g.Wait(); code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
			if tt.wantErrorFor != "" {
				if n := len(acptest.ResponsesByID(msgs)[tt.wantErrorFor]); n != 1 {
					t.Errorf("got %d responses to id %s, want 1", n, tt.wantErrorFor)
				}
			}
			// Logged with its size.
			log := g.AllStderr()
			m := regexp.MustCompile(`msg="agent line exceeds the line cap; discarded".* bytes=(\d+)`).FindStringSubmatch(log)
			if m == nil {
				t.Fatalf("no log of the discarded line:\n%s", log)
			}
			want := len(tt.prefix) + huge + len(tt.suffix) + 1
			if m[1] != strconv.Itoa(want) {
				t.Errorf("logged bytes=%s, want %d", m[1], want)
			}
			if tt.logLevel == "" && !strings.Contains(log, "oversize_from_agent=1") {
				t.Errorf("the summary does not count one oversized line:\n%s", log)
			}
		})
	}
}

// TestE2EOversizeClientLine: a client request over the cap never reaches
// the agent; the client gets one error for it, and later frames pass.
func TestE2EOversizeClientLine(t *testing.T) {
	g := startGuard(t, []string{"--max-line", strconv.Itoa(mib)}, "cat")
	big := `{"jsonrpc":"2.0","id":9,"method":"x/big","params":{"s":"` + strings.Repeat("b", 2*mib) + `"}}` + "\n"
	const next = `{"jsonrpc":"2.0","method":"x/next"}` + "\n"
	werr := g.WriteAsync([]byte(big+next), true)
	m := g.Next()
	if string(m.ID) != "9" || m.Error == nil || m.Error.Code != -32600 || !strings.Contains(m.Error.Message, "exceeds the line cap") {
		t.Fatalf("got %s, want one -32600 error for id 9 naming the line cap", acptest.Trunc(m.Raw, 300))
	}
	if got := string(g.Line()); got != next {
		t.Fatalf("got %q, want %q", got, next)
	}
	if rest := g.RestBytes(); len(rest) != 0 {
		t.Errorf("more output: %q", acptest.Trunc(rest, 300))
	}
	if err := <-werr; err != nil {
		t.Fatalf("writing: %v", err)
	}
	if code := g.Wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

// TestE2EOversizeMemoryBounded pushes a 512 MiB line through a proxy with
// a 1 MiB cap and checks acp-guard's peak resident set stays far below it.
func TestE2EOversizeMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("pushes 512 MiB through a pipe")
	}
	const (
		huge  = 512 * mib
		bound = 64 * mib
	)
	answer := `{"jsonrpc":"2.0","id":1,"result":{}}`
	g := startGuard(t, []string{"--max-line", strconv.Itoa(mib)}, hugeAgent("", huge, "", answer)...)
	g.Send(acptest.Request(1, "x/big", ""))
	if got := string(g.Line()); got != answer+"\n" {
		t.Fatalf("got %q, want %q", got, answer+"\n")
	}
	// The agent still runs (it waits for EOF), so acp-guard does too.
	hwm := acptest.VmHWM(t, g.Pid())
	g.CloseStdin()
	if code := g.Wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	// VmHWM, not rusage: Linux carries the forking process's peak (this
	// test binary's) into the exec'd child's ru_maxrss.
	t.Logf("512 MiB line through --max-line 1MiB: acp-guard VmHWM %.1f MiB", float64(hwm)/mib)
	if hwm > bound {
		t.Errorf("acp-guard VmHWM %d bytes, want < %d", hwm, bound)
	}
	if log := g.AllStderr(); !strings.Contains(log, "bytes="+strconv.Itoa(huge+1)) {
		t.Errorf("the log does not name the line's size %d:\n%s", huge+1, log)
	}
}
