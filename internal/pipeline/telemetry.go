package pipeline

import (
	"context"
	"errors"
	"log/slog"

	"github.com/acp-guard/acp-guard/telemetry"
	"github.com/acp-guard/acp-guard/transport"
)

// startTelemetry returns the session's telemetry, nil when it is off. A
// setting it cannot use (an OTLP protocol it does not speak, a bad
// timeout, an exporter that cannot be built, a build without telemetry)
// is logged once and telemetry stays off: it never stops an agent from
// starting. Off, nothing of the OpenTelemetry SDK is created.
func startTelemetry(ctx context.Context, cfg *Options, o Origin, log *slog.Logger) *telemetry.Telemetry {
	getenv := cfg.getenv
	if cfg.OTelSessionID != "" {
		getenv = func(k string) string {
			if k == telemetry.EnvSessionID {
				return cfg.OTelSessionID
			}
			return cfg.getenv(k)
		}
	}
	set, ok, err := telemetry.FromEnv(getenv, cfg.OTel)
	if err != nil || !ok {
		if err != nil {
			log.Warn("telemetry off: configuration not usable", "err", err)
		}
		return nil
	}
	set.ServiceVersion = cfg.version()
	tel, err := telemetry.New(ctx, set, log, o.identity(cfg.Adapter))
	switch {
	case errors.Is(err, telemetry.ErrNotBuilt):
		log.Warn("telemetry requested but not available", "err", err)
		return nil
	case err != nil:
		log.Warn("telemetry off: exporter not usable", "err", err)
		return nil
	}
	return tel
}

// closeTelemetry flushes within the telemetry's flush deadline (at most
// telemetry.MaxFlush, whatever the collector does). Failures were logged
// by the telemetry itself, once.
func closeTelemetry(tel *telemetry.Telemetry, counts transport.Counts) {
	if tel == nil {
		return
	}
	_ = tel.Close(context.Background(), telemetry.Frames{ClientToAgent: int64(counts.ClientFrames), AgentToClient: int64(counts.AgentFrames)})
}
