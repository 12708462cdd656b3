package acpguard

import (
	"context"

	"github.com/acp-guard/acp-guard/internal/pipeline"
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
	pl, err := pipeline.Assemble(context.Background(), cfg.options(), pipeline.Origin{Recorded: true, Events: events, Offline: true})
	if err != nil {
		return out, configError(err)
	}
	out.Result = pl.Play(events)
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
	pl, err := pipeline.Assemble(ctx, cfg.options(), pipeline.Origin{Recorded: true, Events: events})
	if err != nil {
		return Result{}, configError(err)
	}
	return pl.Run(ctx, s.options(transport.Options{Agent: pl.ServeAgent(events, opts)}))
}
