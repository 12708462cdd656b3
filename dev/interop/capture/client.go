package capture

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// Request ids the client uses.
const (
	idInitialize   = 0
	idAuthenticate = 1
	idSessionNew   = 2
	idPrompt       = 3
)

// Options describe one capture run.
type Options struct {
	Argv       []string      // agent command
	Env        []string      // complete agent environment
	Dir        string        // agent working directory and session cwd
	Adapter    string        // meta adapter name
	Scenario   string        // meta scenario name
	AuthMethod string        // when set, authenticate with this methodId before session/new
	Prompt     string        // prompt text (default "Say hello")
	Timeout    time.Duration // for the turn, from the session/prompt request on
	Startup    time.Duration // until session/prompt is sent (default 3 minutes)
	Grace      time.Duration // wait after session/cancel or stdin close before killing
	Recorder   *Recorder
}

// Result is what the client saw.
type Result struct {
	StopReason  string          // prompt result stopReason
	Error       json.RawMessage // JSON-RPC error of the first failed request
	ErrorMethod string          // method of that request
	TimedOut    bool            // the deadline passed before the prompt returned
	ExitCode    int
	Signal      string
}

// Run starts the agent, runs one turn and records it. It returns an error
// only when the agent could not be started or the transcript not written.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Prompt == "" {
		o.Prompt = "Say hello"
	}
	if o.Grace == 0 {
		o.Grace = 3 * time.Second
	}
	rec := o.Recorder
	cmd := exec.Command(o.Argv[0], o.Argv[1:]...)
	cmd.Env, cmd.Dir = o.Env, o.Dir
	platform.OwnGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Result{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return Result{}, err
	}
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("capture: start %s: %w", o.Argv[0], err)
	}
	lines := make(chan []byte)
	readersDone := make(chan struct{}, 2)
	// The stdout reader exits at EOF (agent exit or kill); the stderr reader
	// likewise. The waiter below waits for both before cmd.Wait.
	go func() {
		defer func() { close(lines); readersDone <- struct{}{} }()
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		defer func() { readersDone <- struct{}{} }()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			rec.Stderr(sc.Text())
		}
	}()
	exited := make(chan *os.ProcessState, 1)
	go func() {
		<-readersDone
		<-readersDone
		_ = cmd.Wait()
		exited <- cmd.ProcessState
	}()

	c := &client{o: o, stdin: stdin, rec: rec}
	res := c.loop(ctx, cmd.Process.Pid, lines, exited)
	return res, rec.Err()
}

type client struct {
	o         Options
	stdin     io.WriteCloser
	rec       *Recorder
	sessionID string
	closed    bool
	prompted  func() // restarts the deadline for the turn
}

func (c *client) send(v any) {
	if c.closed {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	c.rec.Frame(DirC2A, b)
	_, _ = c.stdin.Write(append(b, '\n'))
}

func (c *client) request(id int, method string, params any) {
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

func (c *client) closeStdin() {
	if !c.closed {
		c.closed = true
		_ = c.stdin.Close()
	}
}

// frame is the part of a JSON-RPC message the client reads.
type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (c *client) loop(ctx context.Context, pid int, lines <-chan []byte, exited <-chan *os.ProcessState) Result {
	var res Result
	startup := c.o.Startup
	if startup == 0 {
		startup = 3 * time.Minute
	}
	deadline := time.NewTimer(startup)
	c.prompted = func() { deadline.Reset(c.o.Timeout) }
	defer deadline.Stop()
	var kill <-chan time.Time
	finish := func() {
		c.closeStdin()
		if kill == nil {
			kill = time.After(c.o.Grace)
		}
	}
	c.request(idInitialize, acp.AgentMethodInitialize, map[string]any{
		"protocolVersion": acp.ProtocolVersionNumber,
		"clientCapabilities": map[string]any{
			"fs":       map[string]any{"readTextFile": false, "writeTextFile": false},
			"terminal": false,
		},
		"clientInfo": map[string]any{"name": "acp-guard-capture", "version": "0.1.0"},
	})
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			c.rec.Frame(DirA2C, line)
			var f frame
			if json.Unmarshal(line, &f) != nil {
				continue
			}
			if c.handle(f, &res) {
				finish()
			}
		case st := <-exited:
			res.ExitCode = st.ExitCode()
			if sig, ok := platform.ExitSignal(st); ok {
				res.Signal = sig.String()
				res.ExitCode = 128 + int(sig)
			}
			c.rec.Exit(res.ExitCode, res.Signal)
			return res
		case <-deadline.C:
			res.TimedOut = true
			if c.sessionID != "" && !c.closed {
				c.send(map[string]any{"jsonrpc": "2.0", "method": acp.AgentMethodSessionCancel,
					"params": map[string]any{"sessionId": c.sessionID}})
				kill = time.After(c.o.Grace)
			} else {
				finish()
			}
		case <-kill:
			c.closeStdin()
			_ = platform.KillGroup(pid, platform.SIGKILL)
			kill = nil
		case <-ctx.Done():
			c.closeStdin()
			_ = platform.KillGroup(pid, platform.SIGKILL)
			ctx = context.Background()
		}
	}
}

// handle reacts to one frame and reports whether the turn is over.
func (c *client) handle(f frame, res *Result) bool {
	if f.Method != "" {
		if len(f.ID) > 0 {
			c.answer(f)
		}
		return false
	}
	var id int
	if json.Unmarshal(f.ID, &id) != nil {
		return false
	}
	method := map[int]string{idInitialize: acp.AgentMethodInitialize, idAuthenticate: acp.AgentMethodAuthenticate,
		idSessionNew: acp.AgentMethodSessionNew, idPrompt: acp.AgentMethodSessionPrompt}[id]
	if len(f.Error) > 0 && string(f.Error) != "null" {
		res.Error, res.ErrorMethod = f.Error, method
		return true
	}
	switch id {
	case idInitialize:
		if c.o.AuthMethod != "" {
			c.request(idAuthenticate, acp.AgentMethodAuthenticate, map[string]any{"methodId": c.o.AuthMethod})
			return false
		}
		c.newSession()
	case idAuthenticate:
		c.newSession()
	case idSessionNew:
		var r struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(f.Result, &r)
		c.sessionID = r.SessionID
		c.request(idPrompt, acp.AgentMethodSessionPrompt, map[string]any{
			"sessionId": c.sessionID,
			"prompt":    []any{map[string]any{"type": "text", "text": c.o.Prompt}},
		})
		if c.prompted != nil {
			c.prompted()
		}
	case idPrompt:
		var r struct {
			StopReason string `json:"stopReason"`
		}
		_ = json.Unmarshal(f.Result, &r)
		res.StopReason = r.StopReason
		return true
	}
	return false
}

func (c *client) newSession() {
	c.request(idSessionNew, acp.AgentMethodSessionNew, map[string]any{"cwd": c.o.Dir, "mcpServers": []any{}})
}

// answer replies to an agent→client request: permission requests are
// rejected, everything else is not implemented.
func (c *client) answer(f frame) {
	if f.Method == acp.ClientMethodSessionRequestPermission {
		var p struct {
			Options []struct {
				OptionID string `json:"optionId"`
				Kind     string `json:"kind"`
			} `json:"options"`
		}
		_ = json.Unmarshal(f.Params, &p)
		outcome := map[string]any{"outcome": "cancelled"}
		for _, opt := range p.Options {
			if opt.Kind == "reject_once" {
				outcome = map[string]any{"outcome": "selected", "optionId": opt.OptionID}
				break
			}
		}
		c.send(map[string]any{"jsonrpc": "2.0", "id": f.ID, "result": map[string]any{"outcome": outcome}})
		return
	}
	c.send(map[string]any{"jsonrpc": "2.0", "id": f.ID, "error": map[string]any{
		"code": -32601, "message": "Method not found: " + f.Method}})
}

// Env builds an environment from base pairs ("K=V"), keeping only the
// named variables of the current process (such as PATH) beside them.
func Env(keep []string, pairs ...string) []string {
	var env []string
	for _, k := range keep {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, pairs...)
}

var errNoArgv = errors.New("capture: empty agent command")

func checkArgv(argv []string) error {
	if len(argv) == 0 || strings.TrimSpace(argv[0]) == "" {
		return errNoArgv
	}
	return nil
}
