package pipeline

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/replay"
	"github.com/acp-guard/acp-guard/transport"
)

// ServeAgent is the agent a served session (the library's Serve) guards:
// the recording played by replay.Serve, logging to the pipeline's logger
// unless opts names one.
func (pl *Pipeline) ServeAgent(events []replay.Event, opts replay.ServeOptions) *transport.AgentPipes {
	if opts.Logger == nil {
		opts.Logger = pl.log
	}
	return serveAgent(events, opts)
}

// serveAgent starts replay.Serve on pipes and returns their ends as the
// agent. Its goroutine ends when Serve does: at the recorded exit, or when
// a signal ends it early — the escalation's SIGKILL, or the signal the
// recorded agent died of after its client left (the SIGTERM an idle agent
// gets at once): the served agent dies of it as the recorded one did. Any
// other stop, the context ending included, reaches it only that way: it
// plays what the recorded agent did.
func serveAgent(events []replay.Event, opts replay.ServeOptions) *transport.AgentPipes {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	sctx, kill := context.WithCancel(context.Background())
	done := make(chan struct{})
	lastSig := lingeringSignal(events)
	var byLastSig atomic.Bool
	var st event.ExitStatus
	go func() {
		defer close(done)
		code, err := replay.Serve(sctx, events, opts, inR, outW, errW)
		switch {
		case err != nil && sctx.Err() != nil && byLastSig.Load():
			st = event.ExitStatus{Code: 128 + int(lastSig), Signal: transport.SignalName(lastSig)}
		case err != nil && sctx.Err() != nil:
			st = event.ExitStatus{Code: 128 + int(platform.SIGKILL), Signal: transport.SignalName(platform.SIGKILL)}
		case err != nil:
			fmt.Fprintf(errW, "acp-guard: replay: %v\n", err)
			st = event.ExitStatus{Code: 1}
		default:
			st = event.ExitStatus{Code: code, Signal: recordedSignal(events, code)}
		}
		inR.CloseWithError(io.ErrClosedPipe) // later writes from the relay fail, never block
		outW.Close()
		errW.Close()
	}()
	return &transport.AgentPipes{
		Stdin: inW, Stdout: outR, Stderr: errR, Name: recordedCommand(events),
		Wait: func() event.ExitStatus { <-done; kill(); return st },
		// The served agent acts out its recorded reaction to a stop.
		Signal: func(sig os.Signal) error {
			switch {
			case sig == platform.SIGKILL:
				kill()
			case lastSig != 0 && sig == lastSig:
				byLastSig.Store(true)
				kill()
			}
			return nil
		},
	}
}

// lingeringSignal is the signal the recorded agent died of after its
// client had left (0: it did not).
func lingeringSignal(events []replay.Event) platform.Signal {
	for i := len(events) - 1; i >= 0; i-- {
		if ev := events[i]; ev.Dir == replay.DirExit {
			if ev.ClientClosed && ev.Signal != "" && ev.Code != nil && *ev.Code > 128 && *ev.Code < 128+65 {
				return platform.Signal(*ev.Code - 128)
			}
			return 0
		}
	}
	return 0
}

// recordedSignal is the signal name of the recorded exit that code
// reports (128+N), "" when the agent exited on its own.
func recordedSignal(events []replay.Event, code int) string {
	for i := len(events) - 1; i >= 0; i-- {
		if ev := events[i]; ev.Dir == replay.DirExit {
			if ev.Signal != "" && code > 128 {
				return ev.Signal
			}
			return ""
		}
	}
	return ""
}

// recordedCommand is the recorded agent's command, for logs.
func recordedCommand(events []replay.Event) string {
	if m, ok := replay.MetaOf(events); ok && len(m.Argv) > 0 {
		return m.Argv[0]
	}
	return "replay"
}
