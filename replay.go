package acpguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/replay"
	"github.com/acp-guard/acp-guard/transport"
)

// ReplayResult is what replaying a transcript offline produced: the frames
// the pipeline wrote to each side, the bad lines and divergences (see
// replay.Result), and one report per client prompt, in the order the
// turns settled.
type ReplayResult struct {
	replay.Result
	Turns []TurnReport
}

// Replay plays a recorded session offline through the pipeline cfg
// describes — the one the live proxy runs — on a virtual clock that starts
// when the recording did: what `acp-guard replay` does. What cfg leaves
// unset is taken from the recording's meta event (policy, fallback
// models, notices, stall timeout, circuits); circuits and the attempt log
// are kept in memory unless cfg names a place, and the attempt-log writes
// the recording saw fail fail again. A recorded policy that is not valid
// is reported among the errors (a *replay.Divergence on the meta line)
// and the default policy decides. The error is a *ConfigError.
func Replay(events []replay.Event, cfg Config) (ReplayResult, error) {
	var out ReplayResult
	onTurn := cfg.OnTurn
	cfg.OnTurn = func(r TurnReport) {
		if onTurn != nil {
			onTurn(r)
		}
		out.Turns = append(out.Turns, r)
	}
	onLate := cfg.OnLate
	cfg.OnLate = func(l LateOutput) {
		if onLate != nil {
			onLate(l)
		}
		out.addLate(l)
	}
	pl, err := assemble(context.Background(), cfg, origin{recorded: true, events: events, offline: true})
	if err != nil {
		return out, configError(err)
	}
	defer pl.close()
	out.Result = replay.Play(events, replayed{pl.guard, pl.memLog}, replay.PlayOptions{MaxLine: cfg.MaxLine, Logger: pl.log})
	if len(pl.notes) > 0 {
		line := replay.Event{}
		if m, ok := replay.MetaOf(events); ok {
			line = m
		}
		var notes []error
		for _, n := range pl.notes {
			notes = append(notes, &replay.Divergence{Line: line.Line, Err: errors.New(n)})
		}
		out.Errors = append(notes, out.Errors...)
	}
	return out, nil
}

// addLate puts an answered prompt's late output on its turn's report.
func (out *ReplayResult) addLate(l LateOutput) {
	for i := len(out.Turns) - 1; i >= 0; i-- {
		r := &out.Turns[i]
		if r.SessionID == l.SessionID && string(r.RequestID) == string(l.RequestID) {
			r.LateOutput += l.Chunks
			return
		}
	}
}

// Serve plays a recorded session's agent (replay.Serve, in this process)
// behind the pipeline cfg describes, for a live client on s: what
// `acp-guard replay --serve` does. The configuration is completed from the
// recording as for Replay, and circuits and the attempt log are kept in
// memory unless cfg names a place, so a served session never touches the
// state live sessions share. It returns when the served agent has ended
// (its recorded exit, or the session's stop) and every client request
// has been answered. The error is a *ConfigError, or nil for a session
// that ran.
func Serve(ctx context.Context, cfg Config, events []replay.Event, opts replay.ServeOptions, s Streams) (Result, error) {
	pl, err := assemble(ctx, cfg, origin{recorded: true, events: events})
	if err != nil {
		return Result{}, configError(err)
	}
	if opts.Logger == nil {
		opts.Logger = pl.log
	}
	agent := serveAgent(events, opts)
	return pl.run(ctx, &cfg, transport.Options{Agent: agent}, s)
}

// serveAgent starts replay.Serve on pipes and returns their ends as the
// agent. Its goroutine ends when Serve does: at the recorded exit, or when
// a signal ends it early — the escalation's SIGKILL, or the signal the
// recorded agent died of after its client left (the SIGTERM an idle agent
// gets at once): the served agent dies of it as the recorded one did. Any
// other stop, the context ending included, reaches it only that way: it
// plays what the recorded agent did.
func serveAgent(events []replay.Event, opts replay.ServeOptions) *AgentPipes {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	sctx, kill := context.WithCancel(context.Background())
	done := make(chan struct{})
	lastSig := lingeringSignal(events)
	var byLastSig atomic.Bool
	var st ExitStatus
	go func() {
		defer close(done)
		code, err := replay.Serve(sctx, events, opts, inR, outW, errW)
		switch {
		case err != nil && sctx.Err() != nil && byLastSig.Load():
			st = ExitStatus{Code: 128 + int(lastSig), Signal: transport.SignalName(lastSig)}
		case err != nil && sctx.Err() != nil:
			st = ExitStatus{Code: 128 + int(platform.SIGKILL), Signal: transport.SignalName(platform.SIGKILL)}
		case err != nil:
			fmt.Fprintf(errW, "acp-guard: replay: %v\n", err)
			st = ExitStatus{Code: 1}
		default:
			st = ExitStatus{Code: code, Signal: recordedSignal(events, code)}
		}
		inR.CloseWithError(io.ErrClosedPipe) // later writes from the relay fail, never block
		outW.Close()
		errW.Close()
	}()
	return &AgentPipes{
		Stdin: inW, Stdout: outR, Stderr: errR, Name: recordedCommand(events),
		Wait: func() ExitStatus { <-done; kill(); return st },
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
