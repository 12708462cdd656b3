package transport

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"
)

// Options configure Run.
type Options struct {
	Argv      []string
	Env       []string // nil: inherit
	Dir       string
	MaxLine   int64         // line cap in bytes (default 64 MiB)
	Grace     time.Duration // after client EOF: close stdin, wait Grace, TERM, wait Grace, KILL (default 5s)
	Drain     time.Duration // after the agent exits: how long its stdout may stay open (default 500ms)
	StderrPTY bool

	Stdin  io.Reader // client → us
	Stdout io.Writer // us → client (protocol only)
	Stderr io.Writer // agent stderr is copied here line by line

	Signals <-chan os.Signal // forwarded to the agent's process group
	Logger  *slog.Logger
	Hooks   Hooks
	Tap     Tap
	Redact  func(string) string
	// Started, if set, is called with the agent's pid once it runs.
	Started func(pid int)
}

// DefaultMaxLine is the default line cap.
const DefaultMaxLine = 64 << 20

// Result is how a relay session ended.
type Result struct {
	Exit   ExitStatus
	Counts Counts
}

type eventKind uint8

const (
	evClientLines eventKind = iota
	evClientEOF
	evAgentLines
	evAgentEOF
	evStderr
	evExit
	evFire
	evClientGone
	evStderrEOF
)

type event struct {
	kind  eventKind
	lines []Line
	text  string
	exit  ExitStatus
	fire  *scheduled
	err   error
}

// Run starts the agent and relays until it exits. Errors starting the agent
// are returned as *StartError after pending client requests (read within a
// short window) have been answered.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	if o.Grace <= 0 {
		o.Grace = 5 * time.Second
	}
	if o.Drain <= 0 {
		o.Drain = 500 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	log := o.Logger
	ch, err := startChild(o.Argv, o.Env, o.Dir, o.StderrPTY)
	if err != nil {
		return answerUnstarted(o, err), err
	}
	if o.Started != nil {
		o.Started(ch.pgid)
	}
	log.Info("agent started", "pid", ch.pgid, "argv0", o.Argv[0])

	l := &loop{
		events:      make(chan event, 64),
		stderrLines: make(chan string, 4096),
		done:        make(chan struct{}),
		toAgent:     newWriter(ch.stdin, log, "agent"),
		toClient:    newWriter(o.Stdout, log, "client"),
	}
	l.toClient.onFail = func() { l.send(event{kind: evClientGone}) }
	l.relay = NewRelay(Config{MaxLine: o.MaxLine, Logger: log, Hooks: o.Hooks, Tap: o.Tap, Redact: o.Redact}, l)

	// Readers. Each input has exactly one reader goroutine. They exit at
	// EOF or when their file is closed at shutdown; the client reader may
	// stay blocked on a stdin that never closes, which is why nothing
	// waits for it (the process exits under it).
	go readLines(o.Stdin, o.MaxLine, evClientLines, evClientEOF, l)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); readLines(ch.stdout, o.MaxLine, evAgentLines, evAgentEOF, l) }()
	go func() {
		defer readers.Done()
		l.readStderr(ch.stderr, o.Stderr, log)
		l.send(event{kind: evStderrEOF})
	}()
	// The waiter exits when the agent does.
	go func() { st := ch.wait(); l.send(event{kind: evExit, exit: st}) }()
	// Writers exit when their queue is closed (or fails); Run waits for
	// both before returning.
	go l.toAgent.run()
	go l.toClient.run()
	// Signal forwarding stops with done.
	go func() {
		for {
			select {
			case s := <-o.Signals:
				if sig, ok := s.(syscall.Signal); ok {
					log.Info("forwarding signal to agent", "signal", SignalName(sig))
					if err := ch.signalGroup(sig); err != nil {
						log.Warn("forward signal", "err", err)
					}
				}
			case <-l.done:
				return
			}
		}
	}()

	var (
		exitSeen   bool
		exit       ExitStatus
		agentEOF   bool
		stderrEOF  bool
		drainStop  func() bool
		termTimers []func() bool
	)
	finish := func() Result {
		// The agent is gone (or its output is abandoned): whatever it
		// left running in its process group goes with it, so nothing
		// outlives acp-guard.
		_ = ch.signalGroup(syscall.SIGKILL)
		for _, stop := range termTimers {
			stop()
		}
		if drainStop != nil {
			drainStop()
		}
		ch.stdout.Close()
		ch.stderr.Close()
		l.drainStderr()
		l.relay.AgentExited(exit)
		l.flush()
		l.toAgent.close()
		l.toClient.close()
		l.toClient.wait(o.Grace)
		close(l.done)
		waitTimeout(&readers, time.Second)
		return Result{Exit: exit, Counts: l.relay.Counts}
	}
	for {
		var ev event
		select {
		case ev = <-l.events:
		case line := <-l.stderrLines:
			l.relay.Stderr(line)
			l.flush()
			continue
		case <-ctx.Done():
			_ = ch.signalGroup(syscall.SIGTERM)
			ctx = context.Background()
			continue
		}
		switch ev.kind {
		case evClientLines:
			for _, ln := range ev.lines {
				l.relay.FromClient(ln)
			}
		case evAgentLines:
			for _, ln := range ev.lines {
				l.relay.FromAgent(ln)
			}
		case evClientEOF, evClientGone:
			if ev.kind == evClientEOF && ev.err != nil && !errors.Is(ev.err, io.EOF) {
				log.Warn("client input failed", "err", ev.err)
			}
			if l.clientDone {
				break
			}
			l.clientDone = true
			log.Info("client input closed; closing agent stdin", "grace", o.Grace.String())
			l.relay.ClientClosed()
			l.flush()
			l.toAgent.close()
			termTimers = append(termTimers, l.Schedule(o.Grace, func() {
				log.Warn("agent still running after grace; sending SIGTERM")
				_ = ch.signalGroup(syscall.SIGTERM)
				termTimers = append(termTimers, l.Schedule(o.Grace, func() {
					log.Warn("agent ignored SIGTERM; sending SIGKILL")
					_ = ch.signalGroup(syscall.SIGKILL)
				}))
			}))
		case evAgentEOF:
			agentEOF = true
		case evStderrEOF:
			stderrEOF = true
		case evStderr:
			l.relay.Stderr(ev.text)
		case evExit:
			exitSeen, exit = true, ev.exit
			log.Info("agent exited", "code", exit.Code, "signal", exit.Signal)
			// Its output may still be in the pipe, or a grandchild may
			// hold the pipe open: wait for EOF, but not forever.
			drainStop = l.Schedule(o.Drain, func() {
				log.Warn("agent output still open after exit (a grandchild?); killing its process group")
				l.flush()
				l.forceFinish = true
			})
		case evFire:
			if !ev.fire.stopped {
				ev.fire.fired = true
				ev.fire.fn()
			}
		}
		l.flush()
		if exitSeen && agentEOF && stderrEOF {
			return finish(), nil
		}
		if l.forceFinish {
			return finish(), nil
		}
	}
}

// loop is the single goroutine that owns the relay; it implements Output.
type loop struct {
	relay       *Relay
	events      chan event
	stderrLines chan string
	done        chan struct{}
	toAgent     *writer
	toClient    *writer
	outAgent    [][]byte
	outClient   [][]byte
	clientDone  bool
	forceFinish bool
	stderrDrops uint64
}

func (l *loop) send(ev event) {
	select {
	case l.events <- ev:
	case <-l.done:
	}
}

func (l *loop) Now() time.Time { return time.Now() }

func (l *loop) WriteClient(line []byte) { l.outClient = appendChunk(l.outClient, line) }
func (l *loop) WriteAgent(line []byte)  { l.outAgent = appendChunk(l.outAgent, line) }

// appendChunk appends b, merging it with the previous chunk when the two are
// adjacent in memory (frames of one read batch that pass unchanged), so a
// batch of pass-through frames leaves in one write.
func appendChunk(chunks [][]byte, b []byte) [][]byte {
	if len(b) == 0 {
		return chunks
	}
	if n := len(chunks); n > 0 {
		prev := chunks[n-1]
		if cap(prev) > len(prev) && len(b) > 0 {
			ext := prev[:len(prev)+1]
			if &ext[len(prev)] == &b[0] && cap(prev)-len(prev) >= len(b) {
				chunks[n-1] = prev[:len(prev)+len(b)]
				return chunks
			}
		}
	}
	return append(chunks, b)
}

func (l *loop) flush() {
	if len(l.outAgent) > 0 {
		l.toAgent.enqueue(l.outAgent)
		l.outAgent = nil
	}
	if len(l.outClient) > 0 {
		l.toClient.enqueue(l.outClient)
		l.outClient = nil
	}
}

type scheduled struct {
	fn      func()
	stopped bool
	fired   bool
}

// Schedule runs fn on the loop goroutine after d. stop must be called on the
// loop goroutine; it reports whether fn had not run yet.
func (l *loop) Schedule(d time.Duration, fn func()) func() bool {
	s := &scheduled{fn: fn}
	t := time.AfterFunc(d, func() { l.send(event{kind: evFire, fire: s}) })
	return func() bool {
		t.Stop()
		if s.fired || s.stopped {
			return false
		}
		s.stopped = true
		return true
	}
}

func readLines(r io.Reader, max int64, linesKind, eofKind eventKind, l *loop) {
	lr := newLineReader(r, max)
	for {
		lines, err := lr.next()
		if len(lines) > 0 {
			l.send(event{kind: linesKind, lines: lines})
		}
		if err != nil {
			l.send(event{kind: eofKind, err: err})
			return
		}
	}
}

// readStderr copies agent stderr to w line by line, continuously, so the
// agent never blocks on it, and hands each line (ANSI-stripped) to the
// loop without blocking: if the loop is busy, lines are counted as dropped
// from evidence (they still reach w).
func (l *loop) readStderr(r io.Reader, w io.Writer, log *slog.Logger) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// An over-long stderr line: copy it, keep its beginning.
			if w != nil {
				_, _ = w.Write(line)
			}
			keep := string(line[:min(len(line), maxRingLine)])
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				if w != nil {
					_, _ = w.Write(line)
				}
			}
			l.stderrLine(keep)
			if err != nil {
				return
			}
			continue
		}
		if len(line) > 0 {
			if w != nil {
				_, _ = w.Write(line)
			}
			l.stderrLine(string(trimEOL(line)))
		}
		if err != nil {
			return
		}
	}
}

// drainStderr hands the relay the stderr lines still queued.
func (l *loop) drainStderr() {
	for {
		select {
		case line := <-l.stderrLines:
			l.relay.Stderr(line)
		default:
			return
		}
	}
}

func (l *loop) stderrLine(s string) {
	select {
	case l.stderrLines <- StripANSI(s):
	default:
		l.stderrDrops++
	}
}

// answerUnstarted reads what the client already sent (within a short
// window) and answers each request with an error: the agent never ran.
func answerUnstarted(o Options, startErr error) Result {
	st := ExitStatus{Code: 127, StartErr: startErr}
	var se *StartError
	if errors.As(startErr, &se) {
		st.Code = se.ExitCode
	}
	out := &syncOutput{w: o.Stdout}
	r := NewRelay(Config{MaxLine: o.MaxLine, Logger: o.Logger, Redact: o.Redact, Tap: o.Tap}, out)
	r.AgentExited(st)
	lines := make(chan []Line, 16)
	go func() { // not waited for: it may block on a stdin that stays open
		lr := newLineReader(o.Stdin, o.MaxLine)
		for {
			b, err := lr.next()
			lines <- b
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	deadline := time.After(300 * time.Millisecond)
	for {
		select {
		case batch, ok := <-lines:
			if !ok {
				return Result{Exit: st}
			}
			for _, ln := range batch {
				r.FromClient(ln)
			}
		case <-deadline:
			return Result{Exit: st}
		}
	}
}

// syncOutput writes directly; used when there is no event loop.
type syncOutput struct{ w io.Writer }

func (s *syncOutput) Now() time.Time          { return time.Now() }
func (s *syncOutput) WriteClient(line []byte) { _, _ = s.w.Write(line) }
func (s *syncOutput) WriteAgent([]byte)       {}
func (s *syncOutput) Schedule(time.Duration, func()) func() bool {
	return func() bool { return false }
}

// waitTimeout waits for wg, at most d (a reader stuck on a file that cannot
// be interrupted must not hold up the exit).
func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	c := make(chan struct{})
	go func() { wg.Wait(); close(c) }()
	select {
	case <-c:
	case <-time.After(d):
	}
}
