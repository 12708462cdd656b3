package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// proxy is one acp-guard process (its demo agent is its child) and the
// harness's side of its pipes. One goroutine reads its stdout, one its
// stderr; both end at EOF, which the process's exit (or kill) brings.
type proxy struct {
	i       int
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	session string
	outDone chan struct{} // stdout read to EOF
	errDone chan struct{} // stderr read to EOF

	mu      sync.Mutex
	resp    map[string][]frame // responses by id
	changed chan struct{}      // cap 1: a response arrived
	tail    []string           // stderr's last lines, for diagnostics
	reaped  bool               // Wait returned: the pid may be someone else's now
}

// frame is a response the client got.
type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int             `json:"code"`
		Data json.RawMessage `json:"data"`
	} `json:"error"`
	raw string
	at  time.Time
}

// LogEvent is a circuit log line of a proxy, stamped when the harness
// read it.
type LogEvent struct {
	Proxy int
	Kind  string // unavailable | recovered | probe | failed | overlay
	At    time.Time
	// Err is a failed call's error, its numbers elided (errShape), to
	// tally why calls failed.
	Err string
}

var digits = regexp.MustCompile(`[0-9][0-9]+`)

// errShape is the err= value of a log line, numbers elided and at most
// 160 bytes ("" when none).
func errShape(line string) string {
	i := strings.Index(line, " err=")
	if i < 0 {
		return ""
	}
	v := line[i+len(" err="):]
	if strings.HasPrefix(v, `"`) {
		if j := strings.Index(v[1:], `" `); j >= 0 {
			v = v[1 : j+1]
		} else {
			v = strings.Trim(v, `"`)
		}
	} else if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	v = digits.ReplaceAllString(v, "N")
	if len(v) > 160 {
		v = v[:160]
	}
	return v
}

var logKinds = map[string]string{
	`msg="circuit store unavailable"`: "unavailable",
	`msg="circuit store recovered"`:   "recovered",
	`msg="circuit probe"`:             "probe",
	`msg="circuit acquire"`:           "failed", // debug: a circuit call that failed
	`msg="circuit fail"`:              "failed",
	// A proxy validated a published catalogue overlay (internal/pipeline/overlaystore.go).
	`msg="catalogue overlay validated`: "overlay",
}

func startProxy(ctx context.Context, i int, argv, env []string, onLog func(LogEvent)) (*proxy, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	platform.OwnGroup(cmd)
	cmd.Cancel = func() error { return platform.KillGroup(cmd.Process.Pid, platform.SIGKILL) }
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errR, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p := &proxy{i: i, cmd: cmd, stdin: in, outDone: make(chan struct{}), errDone: make(chan struct{}),
		resp: map[string][]frame{}, changed: make(chan struct{}, 1)}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("proxy %d: %w", i, err)
	}
	go p.readOut(out)
	go p.readErr(errR, onLog)
	return p, nil
}

func (p *proxy) readOut(r io.Reader) {
	defer close(p.outDone)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var f frame
		if json.Unmarshal([]byte(line), &f) != nil || f.Method != "" || len(f.ID) == 0 {
			continue // a notification (or not JSON: the run's checks count answers only)
		}
		f.raw, f.at = line, time.Now()
		p.mu.Lock()
		id := strings.Trim(string(f.ID), `"`)
		p.resp[id] = append(p.resp[id], f)
		p.mu.Unlock()
		select {
		case p.changed <- struct{}{}:
		default:
		}
	}
}

func (p *proxy) readErr(r io.Reader, onLog func(LogEvent)) {
	defer close(p.errDone)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for needle, kind := range logKinds {
			if strings.Contains(line, needle) {
				e := LogEvent{Proxy: p.i, Kind: kind, At: time.Now()}
				if kind == "failed" {
					e.Err = errShape(line)
				}
				onLog(e)
			}
		}
		p.mu.Lock()
		if p.tail = append(p.tail, line); len(p.tail) > 40 {
			p.tail = p.tail[1:]
		}
		p.mu.Unlock()
	}
}

func (p *proxy) send(s string) error {
	_, err := io.WriteString(p.stdin, s)
	return err
}

// wait returns the first response to id once it came.
func (p *proxy) wait(ctx context.Context, id string) (frame, error) {
	for {
		p.mu.Lock()
		got := p.resp[id]
		p.mu.Unlock()
		if len(got) > 0 {
			return got[0], nil
		}
		select {
		case <-p.changed:
		case <-p.outDone:
			return frame{}, fmt.Errorf("proxy %d: output ended before the answer to %s; stderr:\n%s", p.i, id, p.stderrTail())
		case <-ctx.Done():
			return frame{}, fmt.Errorf("proxy %d: no answer to %s: %w", p.i, id, ctx.Err())
		}
	}
}

// answered is how many responses to id the client got.
func (p *proxy) answered(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.resp[id])
}

func (p *proxy) first(id string) (frame, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if fs := p.resp[id]; len(fs) > 0 {
		return fs[0], true
	}
	return frame{}, false
}

func (p *proxy) stderrTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

func (p *proxy) closeInput() { p.stdin.Close() }

// waitExit reads both outputs to the end and reaps the process, killing
// its process group if it takes longer than grace.
func (p *proxy) waitExit(grace time.Duration) {
	t := time.AfterFunc(grace, p.kill)
	defer t.Stop()
	<-p.outDone
	<-p.errDone
	_ = p.cmd.Wait()
	p.mu.Lock()
	p.reaped = true
	p.mu.Unlock()
}

// kill ends the proxy's process group (the proxy and its agent), unless
// it was reaped already.
func (p *proxy) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd.Process != nil && !p.reaped {
		_ = platform.KillGroup(p.cmd.Process.Pid, platform.SIGKILL)
	}
}

func request(id int, method, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
}

func sessionID(f frame) string {
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if f.Error != nil || json.Unmarshal(f.Result, &r) != nil {
		return ""
	}
	return r.SessionID
}
