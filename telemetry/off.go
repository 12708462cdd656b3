//go:build nootel

package telemetry

import (
	"context"
	"log/slog"
	"time"

	"github.com/acp-guard/acp-guard/event"
	"github.com/acp-guard/acp-guard/observers"
)

// Telemetry is absent from a build with -tags nootel: New refuses, and
// the methods of a nil *Telemetry do nothing.
type Telemetry struct{}

// Frames are the relay's totals.
type Frames struct{ ClientToAgent, AgentToClient int64 }

// New reports ErrNotBuilt.
func New(context.Context, Settings, *slog.Logger, observers.Identity) (*Telemetry, error) {
	return nil, ErrNotBuilt
}

func (*Telemetry) Event(event.Event)                   {}
func (*Telemetry) Close(context.Context, Frames) error { return nil }
func (*Telemetry) FlushDeadline() time.Duration        { return 0 }
func (*Telemetry) InstanceID() string                  { return "" }
func (*Telemetry) Dropped() int64                      { return 0 }
func (*Telemetry) Failures() int64                     { return 0 }
