package demoagent

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/internal/syncio"
)

// Run speaks ACP as an agent on in/out until in reaches EOF (then it returns
// nil), ctx is cancelled (then it returns ctx.Err()), or the scenario ends
// the process (then it returns an *ExitError for the caller to act on).
// Diagnostics go to errOut. An unknown scenario is an error.
//
// Scenarios "hang" and "ignore-term" do not return on EOF; they keep running
// until ctx is cancelled (a real process: until it is killed).
func Run(ctx context.Context, opts Options, in io.Reader, out io.Writer, errOut io.Writer) error {
	sc, ok := lookup(opts.Scenario)
	if !ok {
		return fmt.Errorf("demo agent: unknown scenario %q (see --list)", opts.Scenario)
	}
	opts = opts.withDefaults(sc)
	if opts.Error != "" {
		if _, err := providerFailure(familyGeneric, opts.Error, opts.Now(), opts.ResetIn); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := &agent{
		ctx:         ctx,
		opts:        opts,
		sc:          sc,
		w:           newFrameWriter(out),
		errOut:      syncio.NewWriter(errOut),
		pending:     make(map[string]chan *inbound),
		cancels:     make(map[string]map[*turn]struct{}),
		models:      make(map[string]string),
		exit:        make(chan *ExitError, 1),
		inputClosed: make(chan struct{}),
	}
	if sc.start != nil {
		stop, err := sc.start(a)
		if err != nil {
			return err
		}
		if stop != nil {
			defer stop()
		}
	}

	readDone := make(chan error, 1)
	// The reader goroutine owns in. It exits at EOF or a read error; when Run
	// returns early (ctx or a scripted exit) it exits once in is closed.
	go func() { readDone <- a.readLoop(in) }()

	var err error
	select {
	case err = <-readDone:
		// No response from the client can arrive any more.
		close(a.inputClosed)
		switch {
		case err != nil:
		case sc.stayAfterEOF:
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case e := <-a.exit:
				err = e
			}
		default:
			err = a.waitTurns(ctx)
		}
	case <-ctx.Done():
		err = ctx.Err()
	case e := <-a.exit:
		err = e
	}
	var exitErr *ExitError
	if errors.As(err, &exitErr) {
		// A scripted exit: like a real process exit, nothing else is
		// written and in-flight turns are abandoned.
		return err
	}
	cancel()
	a.turns.Wait()
	if ferr := a.w.flush(); err == nil && ferr != nil && !errors.Is(ferr, io.ErrClosedPipe) {
		err = fmt.Errorf("demo agent: writing stdout: %w", ferr)
	}
	return err
}

// waitTurns lets the turns in flight at stdin EOF finish (a client may
// write a prompt and close its end at once), unless a turn ends the process
// or ctx ends first.
func (a *agent) waitTurns(ctx context.Context) error {
	done := make(chan struct{})
	// Exits when the last turn ends; Run's deferred cancel ends them all.
	go func() {
		a.turns.Wait()
		close(done)
	}()
	select {
	case <-done:
		select {
		case e := <-a.exit:
			return e
		default:
			return nil
		}
	case e := <-a.exit:
		return e
	case <-ctx.Done():
		return ctx.Err()
	}
}

// agent is the state of one Run. Fields below mu are shared between the
// reader goroutine and turn goroutines.
type agent struct {
	ctx         context.Context
	opts        Options
	sc          *scenario
	w           *frameWriter
	errOut      *syncio.Writer
	exit        chan *ExitError // a turn asks Run to end the process
	inputClosed chan struct{}   // closed at stdin EOF
	turns       sync.WaitGroup  // running turn goroutines; Run waits for them

	mu       sync.Mutex
	nextID   int64                         // ids of the agent's own requests
	pending  map[string]chan *inbound      // our request id → waiter
	sessions int                           // sessions created so far
	models   map[string]string             // session id → current model id
	cancels  map[string]map[*turn]struct{} // session id → in-flight turns
	prompts  int                           // prompts received so far
}

func (a *agent) logf(format string, args ...any) {
	fmt.Fprintf(a.errOut, "demo-agent: "+format+"\n", args...)
}

// readLoop reads newline-delimited frames of any length and dispatches each
// in arrival order. It returns nil at EOF.
func (a *agent) readLoop(in io.Reader) error {
	r := bufio.NewReaderSize(in, 64<<10)
	var long []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			long = append(long, chunk...)
			line, long = long, nil
		}
		if len(line) > 0 {
			a.dispatch(line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("demo agent: reading stdin: %w", err)
		}
	}
}

func trimEOL(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}

func (a *agent) dispatch(raw []byte) {
	line := trimEOL(raw)
	if len(line) == 0 {
		return
	}
	var m inbound
	if err := json.Unmarshal(line, &m); err != nil {
		a.logf("ignoring a line that is not JSON (%d bytes)", len(line))
		return
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.Method != "" && hasID:
		a.handleRequest(&m, line)
	case m.Method != "":
		a.handleNotification(&m)
	case hasID:
		a.handleResponse(&m)
	default:
		a.logf("ignoring a message with neither method nor id")
	}
}

func (a *agent) reply(id json.RawMessage, result any) {
	_ = a.w.write(resultLine(id, result), true)
}

func (a *agent) replyError(id json.RawMessage, code int, msg string) {
	_ = a.w.write(errorLine(id, &rpcError{Code: code, Message: msg}), true)
}

func (a *agent) handleRequest(m *inbound, line []byte) {
	if a.sc.request != nil && a.sc.request(a, m) {
		return
	}
	switch m.Method {
	case acp.AgentMethodInitialize:
		a.reply(m.ID, a.initializeResult())
	case acp.AgentMethodAuthenticate:
		a.reply(m.ID, struct{}{})
	case acp.AgentMethodSessionNew:
		a.reply(m.ID, a.newSession())
	case acp.AgentMethodSessionSetModel:
		a.setModel(m)
	case acp.AgentMethodSessionSetConfigOption:
		a.setConfigOption(m)
	case acp.AgentMethodSessionPrompt:
		a.startTurn(m)
	case methodEcho:
		if a.echo(m) {
			a.reply(m.ID, struct{}{})
		} else {
			a.replyError(m.ID, codeInvalidParams, "test/echo: params.payload must be base64")
		}
	case methodMirror:
		a.reply(m.ID, map[string]string{"line": base64.StdEncoding.EncodeToString(line)})
	default:
		a.replyError(m.ID, codeMethodNotFound, "Method not found: "+m.Method)
	}
}

func (a *agent) handleNotification(m *inbound) {
	switch m.Method {
	case acp.AgentMethodSessionCancel:
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			a.cancelSession(p.SessionID)
		}
	case methodEcho:
		if !a.echo(m) {
			a.logf("test/echo: params.payload must be base64")
		}
	}
}

// handleResponse hands a client's answer to the turn waiting for it.
func (a *agent) handleResponse(m *inbound) {
	key := string(m.ID)
	a.mu.Lock()
	ch, ok := a.pending[key]
	delete(a.pending, key)
	a.mu.Unlock()
	if !ok {
		a.logf("ignoring a response to unknown id %s", key)
		return
	}
	ch <- m // buffered; the waiter may have gone
}

// call sends a request to the client and waits for its response or for ctx.
func (a *agent) call(ctx context.Context, method string, params any) (*inbound, error) {
	a.mu.Lock()
	a.nextID++
	id := a.nextID
	key := strconv.FormatInt(id, 10)
	ch := make(chan *inbound, 1)
	a.pending[key] = ch
	a.mu.Unlock()
	if err := a.w.write(requestLine(id, method, params), true); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		return m, nil
	case <-ctx.Done():
		a.mu.Lock()
		delete(a.pending, key)
		a.mu.Unlock()
		return nil, ctx.Err()
	case <-a.inputClosed:
		return nil, fmt.Errorf("%s: stdin closed before the client answered", method)
	}
}

// logRaw writes one line to stderr as an agent's own log would carry it.
func (a *agent) logRaw(line string) { fmt.Fprintln(a.errOut, line) }
