package acpguard

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/telemetry"
	"github.com/acp-guard/acp-guard/transport"
)

// startTelemetry returns nil when telemetry is off (or not built in).
func startTelemetry(ctx context.Context, cfg *Config, o origin, log *slog.Logger) (*telemetry.Telemetry, error) {
	set, ok, err := telemetry.FromEnv(cfg.getenv, cfg.OTel)
	if err != nil || !ok {
		return nil, err
	}
	set.ServiceVersion = cfg.version()
	tel, err := telemetry.New(ctx, set, log, o.identity(cfg.Adapter))
	if errors.Is(err, telemetry.ErrNotBuilt) {
		log.Warn("telemetry requested but not available", "err", err)
		return nil, nil
	}
	return tel, err
}

// wireTelemetry plugs tel into the guard's configuration; call it before
// guard.New, and wrap the hooks with tel.Hooks after.
func wireTelemetry(tel *telemetry.Telemetry, cfg *guard.Config) {
	if tel == nil {
		return
	}
	cfg.Attempts = tel.Attempts(cfg.Attempts) // nil inside: decisions still counted
	prev := cfg.OnTurn
	cfg.OnTurn = func(r guard.TurnReport) {
		if prev != nil {
			prev(r)
		}
		tel.Turn(r)
	}
	prevLate := cfg.OnLate
	cfg.OnLate = func(l guard.LateOutput) {
		if prevLate != nil {
			prevLate(l)
		}
		tel.Late(l)
	}
}

// closeTelemetry flushes within the grace period (at least a second).
// Failures were logged by the telemetry itself, once.
func closeTelemetry(tel *telemetry.Telemetry, grace time.Duration, counts transport.Counts) {
	if tel == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(grace, time.Second))
	defer cancel()
	_ = tel.Close(ctx, telemetry.Frames{ClientToAgent: int64(counts.ClientFrames), AgentToClient: int64(counts.AgentFrames)})
}
