package pipeline

import (
	"context"
	"errors"

	"github.com/acp-guard/acp-guard/replay"
	"github.com/acp-guard/acp-guard/transport"
)

// Run relays one session through the pipeline — a live agent (t's Argv
// or Agent) or a served recording (ServeAgent) — and closes it. t carries
// the agent and the client's streams; the pipeline completes it with its
// hooks, the tap, the line cap and the grace period.
func (pl *Pipeline) Run(ctx context.Context, t transport.Options) (transport.Result, error) {
	t.MaxLine, t.Grace = pl.opts.MaxLine, pl.opts.grace()
	pl.wrap(&t)
	res, err := transport.Run(ctx, t)
	pl.finish(res)
	return res, err
}

// Play plays the recording offline through the pipeline (the library's
// Replay) and closes it. What the assembly noted about the configuration
// it could not take from the recording (an invalid recorded policy) comes
// first among the result's errors, each a *replay.Divergence on the meta
// line.
func (pl *Pipeline) Play(events []replay.Event) replay.Result {
	defer pl.close()
	res := replay.Play(events, replayed{pl.guard, pl.memLog}, replay.PlayOptions{MaxLine: pl.opts.MaxLine, Logger: pl.log})
	if len(pl.notes) > 0 {
		line := replay.Event{}
		if m, ok := replay.MetaOf(events); ok {
			line = m
		}
		var notes []error
		for _, n := range pl.notes {
			notes = append(notes, &replay.Divergence{Line: line.Line, Err: errors.New(n)})
		}
		res.Errors = append(notes, res.Errors...)
	}
	return res
}
