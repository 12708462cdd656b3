package transport

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// Options configure Run.
type Options struct {
	Argv      []string
	Env       []string // nil: inherit
	Dir       string
	MaxLine   int64         // line cap in bytes (default 64 MiB)
	Grace     time.Duration // after client EOF: close stdin, wait Grace, TERM, wait Grace, KILL (default DefaultGrace)
	StderrPTY bool

	Stdin  io.Reader // client → us
	Stdout io.Writer // us → client (protocol only)
	Stderr io.Writer // agent stderr is copied here line by line

	// Agent, if set, is an agent the caller runs: Run relays over its pipes
	// and starts nothing (Argv, Env, Dir, StderrPTY and Subreaper are
	// ignored).
	Agent *AgentPipes

	Signals <-chan os.Signal // forwarded to the agent's process group
	Logger  *slog.Logger
	Hooks   Hooks
	Tap     Tap
	Redact  func(string) string
	// Started, if set, is called with the agent's pid once it runs.
	Started func(pid int)
	// Subreaper makes this process a child subreaper (Linux) for the
	// session and reaps the orphans the agent leaves, so none stays a
	// zombie (acp-guard as PID 1 in a container).
	Subreaper bool
}

// DefaultMaxLine is the default line cap.
const DefaultMaxLine = 64 << 20

// DefaultGrace is the default grace period (Options.Grace).
const DefaultGrace = 5 * time.Second

// drainWait is how long the agent's stdout may stay open after it exited
// (a grandchild holding it) before the relay stops waiting for it.
const drainWait = 500 * time.Millisecond

// Result is how a relay session ended.
type Result struct {
	Exit   ExitStatus
	Counts Counts
	// GraceSignal is the signal acp-guard itself sent the agent because it
	// was still running a grace period after the client closed its input
	// ("SIGTERM", then "SIGKILL"); "" when it sent none.
	GraceSignal string
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
	evStderrEOF
	evSignal
)

type event struct {
	kind  eventKind
	batch *batch
	text  string
	exit  ExitStatus
	fire  *scheduled
	err   error
	sig   platform.Signal
	why   string // evSignal: where it came from
}

// Run starts the agent and relays until it exits. Errors starting the agent
// are returned as *StartError after pending client requests (read within a
// short window) have been answered. A stop signal already waiting on
// Options.Signals (or a done ctx) when Run begins means the agent is never
// started: the requests the client already sent are answered and the
// result's exit code is 128+N (ExitStatus.Stopped).
//
// Concurrency: each input has exactly one reader goroutine, and every
// event — a batch of lines, an EOF, a stderr line, the exit, a timer — is
// handled under one mutex by the goroutine that produced it. That is the
// relay's single event loop: state changes happen one at a time, and each
// stream's events are handled in the order they were read, so when a
// prompt response is handled every earlier frame of that stream has been.
// Handling in place (rather than handing events to another goroutine)
// keeps a frame's path through the proxy free of scheduler hops.
func Run(ctx context.Context, o Options) (Result, error) {
	o = o.withDefaults()
	if sig, ok := stopRequested(ctx, o.Signals); ok {
		// Told to stop before the agent ran: it is not started, and the
		// requests the client already sent are answered (early.go).
		o.Logger.Info("stop signal before the agent started; not starting it", "signal", SignalName(sig))
		return answerStopped(o, sig), nil
	}
	l, err := start(o)
	if err != nil {
		return answerUnstarted(o, err), err
	}
	readers := l.serve(ctx)
	<-l.finished
	return l.stop(readers), nil
}

// withDefaults fills in what o leaves unset, and makes this process a
// child subreaper when o asks for it and it can.
func (o Options) withDefaults() Options {
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Agent != nil {
		o.Subreaper = false
	}
	if o.Subreaper {
		if err := becomeSubreaper(); err != nil {
			o.Logger.Warn("cannot become a child subreaper; orphans of the agent go to init", "err", err)
			o.Subreaper = false
		}
	}
	return o
}

// start starts the agent (or takes over the caller's) and builds the
// event loop and the relay around it; nothing reads yet.
func start(o Options) (*loop, error) {
	log := o.Logger
	ch, err := startAgent(o)
	if err != nil {
		return nil, err
	}
	if o.Started != nil && ch.pgid > 0 {
		o.Started(ch.pgid)
	}
	log.Info("agent started", "pid", ch.pgid, "argv0", agentName(o))

	l := &loop{
		o:           o,
		log:         log,
		ch:          ch,
		stderrLines: make(chan string, 4096),
		finished:    make(chan struct{}),
		done:        make(chan struct{}),
		toAgent:     newWriter(ch.stdin, log, "agent"),
		toClient:    newWriter(o.Stdout, log, "client"),
		agentOut:    newWatchedReader(ch.stdout),
		in:          newClientInput(o.Stdin),
		now:         time.Now(),
	}
	l.relay = NewRelay(Config{MaxLine: o.MaxLine, Logger: log, Hooks: o.Hooks, Tap: o.Tap, Redact: o.Redact}, l)
	l.stampTap, _ = o.Tap.(StampTap)
	l.pass = passHooks(l.relay.hooks)
	l.openLane()
	return l, nil
}

// serve starts the goroutines that turn the session's inputs into events:
// the readers, the waiter, the signal watcher and the reaper. It returns
// the readers stop waits for.
func (l *loop) serve(ctx context.Context) *sync.WaitGroup {
	o, ch := l.o, l.ch
	// The client reader exits at EOF; it may stay blocked on a stdin that
	// never closes, which is why nothing waits for it (the process exits
	// under it). The agent's stdout and stderr readers exit at EOF or when
	// their files are closed at shutdown; stop waits for them.
	go func() { readLines(l.in, o.MaxLine, evClientLines, evClientEOF, l); l.in.ended() }()
	var readers sync.WaitGroup
	readers.Add(3)
	go func() { defer readers.Done(); readLines(l.agentOut, o.MaxLine, evAgentLines, evAgentEOF, l) }()
	go func() {
		defer readers.Done()
		l.readStderr(ch.stderr, o.Stderr)
		close(l.stderrLines)
	}()
	// Stderr lines reach the loop through a buffer, so the agent never
	// waits on the loop to write its diagnostics; this goroutine ends when
	// the stderr reader does.
	go func() {
		defer readers.Done()
		for line := range l.stderrLines {
			l.handle(event{kind: evStderr, text: line})
		}
		l.handle(event{kind: evStderrEOF})
	}()
	// The waiter exits when the agent does.
	go func() { st := ch.wait(); l.handle(event{kind: evExit, exit: st}) }()
	// Signals and context cancellation become events; this goroutine
	// stops with done.
	go func() {
		for {
			select {
			case s := <-o.Signals:
				if sig, ok := platform.AsSignal(s); ok {
					l.handle(event{kind: evSignal, sig: sig, why: "signal"})
				}
			case <-ctx.Done():
				l.handle(event{kind: evSignal, sig: platform.SIGTERM, why: "context done"})
				ctx = context.Background()
			case <-l.done:
				return
			}
		}
	}()
	if o.Subreaper {
		// The reaper stops with done.
		go reapOrphans(ch.pgid, l.done, l.log)
	}
	return &readers
}

// stop ends a finished session: the agent's process group released, the
// timers stopped, every pending client request answered, the last frames
// written (the client's within the grace period), the goroutines told to
// end and the readers waited for (bounded).
func (l *loop) stop(readers *sync.WaitGroup) Result {
	log, ch := l.log, l.ch
	l.mu.Lock()
	l.closeLane()
	l.stamp(time.Time{}) // the session's end is handled like an event
	if l.forceFinish {
		log.Warn("agent output still open after exit (a grandchild?); killing its process group")
	}
	// Whatever the agent left in its process group goes with it (an agent
	// the caller runs is the caller's).
	if ch.ext == nil {
		ch.release()
	}
	for _, stop := range l.timers {
		stop()
	}
	ch.stdout.Close()
	ch.stderr.Close()
	l.relay.AgentExited(l.exit)
	l.flush()
	// What the client had sent by now is answered too (owed.go).
	l.mu.Unlock()
	l.readOwed(l.o.Grace)
	l.mu.Lock()
	l.owedRead = true
	l.toAgent.close()
	l.toClient.close()
	res := Result{Exit: l.exit, Counts: l.relay.Counts, GraceSignal: l.graceSignal}
	res.Counts.StderrDropped = l.stderrDrops.Load()
	l.mu.Unlock()
	l.toAgent.drain()
	// The last answers go to the client. A slow client gets them all, as
	// long as it keeps reading; one that stops reading for the grace
	// period cannot hold up the exit.
	go l.toClient.drain() // abandoned if the client never reads
	if !l.toClient.waitIdle(l.o.Grace) {
		log.Warn("client stopped reading the final answers; exiting without them")
	}
	close(l.done)
	waitTimeout(readers, time.Second)
	return res
}

// loop is the relay's event loop state; it implements Output. The fields
// after mu are guarded by it.
type loop struct {
	o           Options
	log         *slog.Logger
	ch          *child
	stderrLines chan string
	finished    chan struct{} // closed when the session is over
	done        chan struct{} // closed when Run returns
	stderrDrops atomic.Uint64

	mu          sync.Mutex
	now         time.Time // the stamp of the event being handled (stamp)
	stampTap    StampTap  // the tap, when it wants each event's stamp (nil: it does not)
	relay       *Relay
	toAgent     *writer
	toClient    *writer
	outAgent    [][]byte
	outClient   [][]byte
	clientDone  bool
	graceSignal string // Result.GraceSignal
	exitSeen    bool
	exit        ExitStatus
	agentEOF    bool
	stderrEOF   bool
	forceFinish bool
	over        bool
	timers      []func() bool
	agentOut    *watchedReader
	in          *clientInput // the client's input, as its reader reads it (owed.go)
	owedRead    bool         // stop has read what the client had sent; later lines are dropped
	stopping    bool         // a signal arrived: forwarded once, escalation runs
	escalating  int          // which TERM/KILL timers are set (escalateNone…)
	outLost     bool         // the agent closed stdout while running
	// After the exit: the client writer's progress at the last drain
	// check, and since when it has not moved.
	drainWritten uint64
	drainStalled time.Time

	// The fast path (fast.go): the lane, and what it guards besides the
	// fields above — a reader in the lane owns them, no event runs.
	lane     atomic.Int32
	pass     PassHooks      // the hooks' PassThrough (nil: no fast path)
	pend     []pendingBatch // written on the fast path, not yet observed
	passMsg  Msg            // the fast path's scratch frame
	passMsgs []Msg          // the frames of the batch pending alone, as parsed
}

// handle runs one event under the loop's lock, then writes what it
// produced without the lock. A reader writes its own direction itself
// (the client's frames to the agent, the agent's to the client) and
// leaves the other direction to a goroutine of its own: a reader blocked
// on the other peer's input would deadlock with that peer (cat blocks on
// its stdout while we block on its stdin).
func (l *loop) handle(ev event) {
	l.mu.Lock()
	l.closeLane() // the frames the fast path wrote come first (fast.go)
	var due time.Time
	if ev.kind == evFire {
		due = ev.fire.due
	}
	l.stamp(due)
	l.handleLocked(ev)
	l.openLane()
	l.mu.Unlock()
	switch ev.kind {
	case evClientLines:
		l.toAgent.drain()
		l.toClient.kick()
	case evAgentLines:
		l.toClient.drain()
		l.toAgent.kick()
	case evSignal: // the signal watcher must stay free to see done
		l.toAgent.kick()
		l.toClient.kick()
	default:
		l.toAgent.drain()
		l.toClient.drain()
	}
}

func (l *loop) handleLocked(ev event) {
	if l.over && ev.kind == evClientLines && !l.owedRead {
		// The session is over; a request the client had sent by then is
		// still answered, at once (Relay.FromClient after the exit).
		for _, ln := range ev.batch.lines {
			l.relay.FromClient(ln)
		}
		l.releaseAfter(l.toAgent, ev.batch)
		return
	}
	if l.over {
		if ev.batch != nil {
			ev.batch.release()
		}
		return
	}
	switch ev.kind {
	case evClientLines:
		for _, ln := range ev.batch.lines {
			l.relay.FromClient(ln)
		}
		l.releaseAfter(l.toAgent, ev.batch)
	case evAgentLines:
		for _, ln := range ev.batch.lines {
			l.relay.FromAgent(ln)
		}
		l.releaseAfter(l.toClient, ev.batch)
	case evClientEOF:
		if ev.err != nil && !errors.Is(ev.err, io.EOF) {
			l.log.Warn("client input failed", "err", ev.err)
		}
		l.clientGone()
	case evAgentEOF:
		l.agentEOF = true
		if !l.exitSeen {
			// Usually the exit is on its way; if the agent still runs after
			// the drain period, it closed its stdout and lives on.
			l.timers = append(l.timers, l.Schedule(drainWait, l.checkOutputClosed))
		}
	case evStderr:
		l.relay.Stderr(ev.text)
	case evStderrEOF:
		l.stderrEOF = true
	case evExit:
		l.exitSeen, l.exit = true, ev.exit
		l.log.Info("agent exited", "code", l.exit.Code, "signal", l.exit.Signal)
		// Its output may still be in the pipe, or a grandchild may hold
		// the pipe open: wait for EOF, but not forever (drainCheck).
		l.drainStalled = l.now
		l.toClient.setFine()
		l.timers = append(l.timers, l.Schedule(drainWait, l.drainCheck))
	case evSignal:
		l.signalled(ev.sig, ev.why)
	case evFire:
		if !ev.fire.stopped {
			ev.fire.fired = true
			ev.fire.fn()
		}
	}
	l.flush()
	if l.toClient.failed.Load() && !l.clientDone {
		// The client went away: shut down as if its input had ended.
		l.clientGone()
		l.flush()
	}
	if (l.exitSeen && l.agentEOF && l.stderrEOF) || l.forceFinish {
		l.over = true
		close(l.finished)
	}
}

// clientGone closes the agent's stdin and starts the escalation: when the
// agent is idle (Relay.Idle: it answered a request and owes nothing), TERM
// at once; otherwise TERM once it has been quiet for one grace period;
// KILL after another (escalate).
func (l *loop) clientGone() {
	if l.clientDone {
		return
	}
	l.clientDone = true
	idle := l.relay.Idle()
	l.log.Info("client input closed; closing agent stdin", "grace_ms", l.o.Grace.Milliseconds(), "idle", idle)
	l.relay.ClientClosed()
	l.flush()
	l.toAgent.close()
	switch {
	case l.exitSeen:
		// The agent is gone already; its output drains.
	case idle:
		l.escalate(0, escalateIdle)
	default:
		l.escalate(0, escalateQuiet)
	}
}

// Now is the time of the event being handled: every Ctl.Now, timer and
// record of one event reads the same stamp (see stamp).
func (l *loop) Now() time.Time { return l.now }

// stamp fixes the time of the event about to be handled, under the lock:
// the clock is read once per event, so a decision, the circuit operation
// it reports, the timer it arms and the record it writes agree however
// slowly the machine runs between them. A stamp never goes back (the
// monotonic reading of the previous event's is its floor), and a timer's
// event is stamped no earlier than the deadline its timer was armed for
// (the arming event's stamp plus the delay, compared both by the monotonic
// and by the wall reading, which is all a stored deadline keeps): what an
// event computed as "stamp + d" is due when the timer for d fires.
// due is zero for every event but a timer's.
func (l *loop) stamp(due time.Time) {
	now := time.Now()
	if now.Before(l.now) {
		now = l.now
	}
	if !due.IsZero() && (now.Before(due) || now.Round(0).Before(due.Round(0))) {
		now = due
	}
	l.now = now
	if l.stampTap != nil {
		l.stampTap.Stamp(now)
	}
}

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

// releaseAfter arranges for b to go back to its pool once w has written
// what was queued so far: only frames of b bound for w alias its buffer
// (hooks copy what they keep, and frames the proxy makes are its own).
func (l *loop) releaseAfter(w *writer, b *batch) {
	if w == l.toAgent {
		l.flushTo(w, &l.outAgent, b)
		l.flushTo(l.toClient, &l.outClient, nil)
	} else {
		l.flushTo(w, &l.outClient, b)
		l.flushTo(l.toAgent, &l.outAgent, nil)
	}
}

func (l *loop) flush() {
	l.flushTo(l.toAgent, &l.outAgent, nil)
	l.flushTo(l.toClient, &l.outClient, nil)
}

func (l *loop) flushTo(w *writer, out *[][]byte, b *batch) {
	if len(*out) == 0 && b == nil {
		return
	}
	w.enqueue(item{chunks: *out, release: b})
	*out = nil
}

type scheduled struct {
	fn      func()
	due     time.Time // the arming event's stamp + the delay (zero: Post)
	stopped bool
	fired   bool
}

// Schedule runs fn after d as an event, under the loop's lock. d counts
// from the stamp of the event that calls it, and fn's event is stamped no
// earlier than that deadline. stop must be called under the lock; it
// reports whether fn had not run yet.
func (l *loop) Schedule(d time.Duration, fn func()) func() bool {
	s := &scheduled{fn: fn, due: l.now.Add(max(d, 0))}
	t := time.AfterFunc(d, func() { l.handle(event{kind: evFire, fire: s}) })
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
		b, err := lr.next()
		if len(b.lines) > 0 {
			// The fast path writes agent frames the hooks pass as they
			// are, observed at the next event (fast.go).
			if linesKind != evAgentLines || !l.passAgent(b) {
				l.handle(event{kind: linesKind, batch: b})
			}
		} else {
			b.release()
		}
		if err != nil {
			l.handle(event{kind: eofKind, err: err})
			return
		}
	}
}

// readStderr copies agent stderr to w line by line, continuously, so the
// agent never blocks on it, and hands each line (ANSI-stripped) to the
// loop without blocking: if the loop is busy, lines are counted as dropped
// from evidence (they still reach w).
func (l *loop) readStderr(r io.Reader, w io.Writer) {
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

func (l *loop) stderrLine(s string) {
	select {
	case l.stderrLines <- StripANSI(s):
	default:
		l.stderrDrops.Add(1)
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
