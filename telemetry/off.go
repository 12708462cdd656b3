//go:build nootel

package telemetry

import (
	"context"
	"log/slog"

	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/transport"
)

// Telemetry is absent from a build with -tags nootel: New refuses, and the
// methods of a nil *Telemetry pass everything through.
type Telemetry struct{}

// Frames are the relay's totals.
type Frames struct{ ClientToAgent, AgentToClient int64 }

// New reports ErrNotBuilt.
func New(context.Context, Settings, *slog.Logger, observers.Identity) (*Telemetry, error) {
	return nil, ErrNotBuilt
}

func (*Telemetry) Hooks(inner transport.Hooks) transport.Hooks      { return inner }
func (*Telemetry) Attempts(inner guard.AttemptLog) guard.AttemptLog { return inner }
func (*Telemetry) Turn(guard.TurnReport)                            {}
func (*Telemetry) Late(guard.LateOutput)                            {}
func (*Telemetry) Close(context.Context, Frames) error              { return nil }
func (*Telemetry) Dropped() int64                                   { return 0 }
func (*Telemetry) Failures() int64                                  { return 0 }
