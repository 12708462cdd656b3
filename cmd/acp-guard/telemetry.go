package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/acp-guard/acp-guard/guard"
	"github.com/acp-guard/acp-guard/observers"
	"github.com/acp-guard/acp-guard/telemetry"
	"github.com/acp-guard/acp-guard/transport"
)

// telemetryOptions configure OpenTelemetry export (see package telemetry).
type telemetryOptions struct {
	on bool
}

func bindTelemetryFlags(fs *pflag.FlagSet, o *telemetryOptions) {
	fs.BoolVar(&o.on, "otel", false, "export OpenTelemetry traces and metrics over OTLP (also on when OTEL_EXPORTER_OTLP_ENDPOINT or a signal's endpoint is set; default endpoint localhost:4318)")
}

// startTelemetry returns nil when telemetry is off.
func startTelemetry(ctx context.Context, o telemetryOptions, argv0, adapter string, log *slog.Logger) (*telemetry.Telemetry, error) {
	set, ok, err := telemetry.FromEnv(os.Getenv, o.on)
	if err != nil || !ok {
		return nil, err
	}
	set.ServiceVersion = version
	tel, err := telemetry.New(ctx, set, log, observers.Identity{Flag: adapter, Command: argv0})
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
	cfg.Attempts = tel.Attempts(cfg.Attempts)
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
