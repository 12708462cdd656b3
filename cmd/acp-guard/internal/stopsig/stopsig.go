// Package stopsig catches acp-guard's stop signals — SIGINT, SIGTERM,
// SIGHUP — from the process's first instructions, so that none is lost
// and none kills the proxy before it has answered the client.
//
// The subscription is made by this package's initialization, which Go
// runs as soon as os/signal's is done (packages are initialized in
// import-path order among those whose imports are ready): before the
// other packages' initialization, before main, before flags,
// configuration and the catalogue. Until somebody claims them, the
// signals that arrive are held. Then:
//
//   - the proxy takes them (Take): the held ones first, then each new one,
//     arrive on its channel, and the transport acts on them (a signal
//     before the agent started: the agent is not started, the client's
//     requests are answered, exit 128+N; after: forwarded to the agent);
//   - any other command releases them (Release): they get back the
//     disposition the process started with, and a held signal is raised
//     again, so the process ends exactly as if it had never caught it;
//   - a process that claims neither (--version, a usage error) exits
//     128+N when a signal was held (ExitCode).
//
// A signal ignored when the process started (nohup ignores SIGHUP, a
// shell's background job SIGINT) stays ignored for every command but the
// proxy, which treats it as a stop request like any other: it talks to
// its client over pipes, not a terminal, so a hangup that reaches it is a
// request to stop, and it was one (after startup) before this package
// existed. Release gives such a signal back its ignored disposition.
//
// The package holds the process's one subscription in package state: it
// must exist before main runs.
package stopsig

import (
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// Signals are the stop signals caught.
var Signals = []os.Signal{platform.SIGINT, platform.SIGTERM, platform.SIGHUP}

type state uint8

const (
	holding  state = iota // nobody claimed them yet
	taken                 // the proxy takes them
	released              // the process's own disposition is back
)

// maxHeld bounds the signals held or queued for the proxy; the first is
// the one that counts, the rest are noted only.
const maxHeld = 8

var (
	raw     = make(chan os.Signal, maxHeld)
	arrived atomic.Bool

	mu   sync.Mutex
	st   state
	held []os.Signal
	to   chan os.Signal // the proxy's channel (taken)

	ignoredAtStart = map[os.Signal]bool{} // written by init only
)

func init() {
	for _, s := range Signals {
		ignoredAtStart[s] = signal.Ignored(s)
	}
	signal.Notify(raw, Signals...)
	// The watcher: it lives until Release stops the subscription and
	// closes raw.
	go watch()
}

func watch() {
	for s := range raw {
		arrived.Store(true)
		mu.Lock()
		now := st
		switch now {
		case holding:
			if len(held) < maxHeld {
				held = append(held, s)
			}
		case taken:
			select {
			case to <- s:
			default: // the proxy has the first ones; later ones add nothing
			}
		}
		mu.Unlock()
		if now == released {
			raise(s) // one that came in just before the subscription ended
		}
	}
}

// Take hands the stop signals to the proxy: the channel yields the ones
// held since the process started, then each new one. ok is false when
// they were released already (a test binary, an in-process session of
// another command): the caller subscribes itself. stop gives them back
// (Release) once the session is over.
func Take() (sigs <-chan os.Signal, stop func(), ok bool) {
	mu.Lock()
	defer mu.Unlock()
	if st != holding {
		return nil, nil, false
	}
	st = taken
	to = make(chan os.Signal, maxHeld)
	for _, s := range held {
		to <- s
	}
	held = nil
	return to, Release, true
}

// Release gives the stop signals back the disposition the process
// started with; a signal held meanwhile is raised again (the process dies
// by it, unless it started ignored). Safe to call more than once.
func Release() {
	mu.Lock()
	if st == released {
		mu.Unlock()
		return
	}
	first := held
	st, held = released, nil
	mu.Unlock()
	signal.Stop(raw)
	close(raw) // ends the watcher once it has handled what is queued
	if len(first) > 0 {
		raise(first[0])
	}
}

// raise sends s to this process again, now that it is not caught: the
// runtime's default ends the process by it; a signal the process started
// ignoring stays ignored and raise returns.
func raise(s os.Signal) {
	sig, ok := platform.AsSignal(s)
	if !ok || ignoredAtStart[s] {
		return
	}
	_ = platform.Raise(sig)
	// The kernel delivers it at once; should the runtime not end the
	// process, exit as it would have.
	time.Sleep(time.Second)
	os.Exit(128 + int(sig))
}

// Arrived reports whether a stop signal has arrived from outside.
func Arrived() bool { return arrived.Load() }

// ExitCode is the process's exit code for a command that returned code:
// 128+N when a stop signal N arrived that nobody claimed, else code.
func ExitCode(code int) int {
	mu.Lock()
	defer mu.Unlock()
	if st == holding && len(held) > 0 {
		if sig, ok := held[0].(platform.Signal); ok {
			return 128 + int(sig)
		}
	}
	return code
}
