package transport

import (
	"io"
	"sync/atomic"
	"time"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// How a session ends, besides the agent exiting on its own: the client
// closes its input (clientGone), acp-guard gets a signal (signalled), or
// the agent closes its stdout and stays (checkOutputClosed). Each starts
// the one escalation: TERM after a grace period, KILL after another.
// All of these run under the loop's lock.

// escalate starts the grace timers: after one grace period SIGTERM
// (skipped when sent, the signal the agent already got, was SIGTERM),
// after another SIGKILL. After the client's EOF (escalateQuiet), the first
// period counts from when the agent went quiet (whenQuiet), so an agent
// still working through input the client sent before it closed, to a
// client reading slowly, is not cut off; when the agent was idle at the
// client's EOF (escalateIdle: it answered a request and owes nothing)
// there is nothing to wait for: SIGTERM goes at once — codex-acp and
// claude-agent-acp do not exit on stdin EOF, and a clean close should not
// cost a grace period. One escalation runs at
// a time; a strict one (a signal, a closed stdout) still starts after the
// others.
func (l *loop) escalate(sent platform.Signal, how int) {
	if l.escalating == escalateStrict || l.escalating != escalateNone && how != escalateStrict {
		return
	}
	l.escalating = how
	// graceSignal is set only by the escalations after the client's EOF:
	// an agent that ended that way ended a clean session
	// (Result.GraceSignal).
	afterEOF := func() bool { return l.escalating == escalateQuiet || l.escalating == escalateIdle }
	kill := func() {
		l.log.Warn("agent ignored SIGTERM; sending SIGKILL")
		if afterEOF() {
			l.graceSignal = "SIGKILL"
		}
		_ = l.ch.signalGroup(platform.SIGKILL)
	}
	term := func() {
		if how == escalateIdle {
			l.log.Info("client input closed with the agent idle (nothing in flight); sending SIGTERM now")
		} else {
			l.log.Warn("agent still running after grace; sending SIGTERM")
		}
		if afterEOF() {
			l.graceSignal = "SIGTERM"
		}
		_ = l.ch.signalGroup(platform.SIGTERM)
		l.timers = append(l.timers, l.Schedule(l.o.Grace, kill))
	}
	first := term
	if sent == platform.SIGTERM {
		first = kill
	}
	switch how {
	case escalateIdle:
		first()
	case escalateQuiet:
		l.whenQuiet(first)
	default:
		l.timers = append(l.timers, l.Schedule(l.o.Grace, first))
	}
}

// Escalation kinds (loop.escalating).
const (
	escalateNone   = iota
	escalateQuiet  // after the client's EOF, the agent not idle: from when it went quiet
	escalateIdle   // after the client's EOF, the agent idle: SIGTERM at once
	escalateStrict // after a signal or a closed stdout: from now
)

// whenQuiet runs fn once the agent has been quiet for the grace period —
// nothing read from its stdout, nothing written to its stdin or to the
// client — checking again when it has not. Stalled writes (a peer that
// reads nothing) count as quiet.
func (l *loop) whenQuiet(fn func()) {
	progress := func() uint64 { return l.toAgent.written.Load() + l.toClient.written.Load() }
	last, lastAt := progress(), l.now
	var check func()
	check = func() {
		now := l.now
		if p := progress(); p != last {
			last, lastAt = p, now
		}
		waited, reading := l.agentOut.waiting(now)
		recentRead := reading && waited < l.o.Grace && !l.agentEOF
		if !recentRead && now.Sub(lastAt) >= l.o.Grace {
			fn()
			return
		}
		l.timers = append(l.timers, l.Schedule(max(l.o.Grace/4, time.Millisecond), check))
	}
	l.timers = append(l.timers, l.Schedule(l.o.Grace, check))
}

// signalled forwards the first stop signal acp-guard receives to the
// agent's process group, stops the proxy's own requests (no retry starts
// after it) and escalates if the agent does not go. Later signals are
// logged, not forwarded again.
func (l *loop) signalled(sig platform.Signal, why string) {
	if l.stopping {
		l.log.Info("signal received while stopping; already forwarded", "signal", SignalName(sig), "from", why)
		return
	}
	l.stopping = true
	l.log.Info("forwarding signal to agent", "signal", SignalName(sig), "from", why)
	l.relay.Stopping()
	if platform.StopClosesStdin && l.ch.ext == nil {
		// Windows: no signal reaches an agent without a console; the end
		// of its input is the first thing it is told, then
		// CTRL_BREAK_EVENT, then the job is terminated.
		l.flush()
		l.toAgent.close()
	}
	if err := l.ch.signalGroup(sig); err != nil {
		l.log.Warn("forward signal", "err", err)
	}
	l.escalate(sig, escalateStrict)
}

// checkOutputClosed runs a drain period after the agent's stdout ended
// without its exit: an agent that exited is a zombie by now and its exit
// event is on the way; one that still runs closed its stdout and can
// answer nothing. Its pending requests are answered, its stdin closed, and
// it is terminated after the grace period.
func (l *loop) checkOutputClosed() {
	if l.exitSeen || l.outLost || l.ch.exited() {
		return
	}
	l.outLost = true
	l.log.Warn("agent closed its stdout but still runs; answering pending requests and terminating it", "grace_ms", l.o.Grace.Milliseconds())
	l.relay.agentOutputClosed()
	l.flush()
	l.toAgent.close()
	l.escalate(0, escalateStrict)
}

// drainCheck decides, after the agent exited, whether to stop waiting for
// its stdout's EOF. The drain period counts from the last byte read: it
// ends the session only when the stdout reader has waited that long for
// data (a grandchild holding the pipe open and silent). While the reader
// is busy handing frames on — a slow client — the wait goes on as long as
// the client keeps reading; if the client reads nothing for the grace
// period, the session ends.
func (l *loop) drainCheck() {
	now := l.now
	if l.agentEOF { // stdout is done; only stderr is held open
		l.forceFinish = true
		return
	}
	waited, reading := l.agentOut.waiting(now)
	if reading {
		if waited >= drainWait {
			l.forceFinish = true
			return
		}
		l.timers = append(l.timers, l.Schedule(drainWait-waited, l.drainCheck))
		return
	}
	if w := l.toClient.written.Load(); w != l.drainWritten {
		l.drainWritten, l.drainStalled = w, now
	} else if now.Sub(l.drainStalled) >= l.o.Grace {
		l.log.Warn("client stopped reading after the agent exited; ending the session")
		l.forceFinish = true
		return
	}
	l.timers = append(l.timers, l.Schedule(drainWait, l.drainCheck))
}

// watchedReader tells whether its one reader is waiting in Read and since
// when: the drain period after the agent's exit counts from there.
type watchedReader struct {
	r     io.Reader
	epoch time.Time
	since atomic.Int64 // 1 + ns since epoch when the current Read began; 0: not in Read
}

func newWatchedReader(r io.Reader) *watchedReader {
	return &watchedReader{r: r, epoch: time.Now()}
}

func (w *watchedReader) Read(p []byte) (int, error) {
	w.since.Store(int64(time.Since(w.epoch)) + 1)
	n, err := w.r.Read(p)
	w.since.Store(0)
	return n, err
}

// waiting reports whether a Read is in progress and for how long as of
// now (the event's stamp; a Read that began after it has waited 0).
func (w *watchedReader) waiting(now time.Time) (time.Duration, bool) {
	s := w.since.Load()
	if s == 0 {
		return 0, false
	}
	return max(now.Sub(w.epoch)-time.Duration(s-1), 0), true
}

// processExited reports whether pid has exited (a zombie waiting to be
// reaped, or gone).
func processExited(pid int) bool { return platform.Exited(pid) }
