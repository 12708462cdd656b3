package main

import "github.com/spf13/pflag"

// telemetryOptions configure OpenTelemetry export (see package telemetry).
type telemetryOptions struct {
	on bool
}

func bindTelemetryFlags(fs *pflag.FlagSet, o *telemetryOptions) {
	fs.BoolVar(&o.on, "otel", false, "export OpenTelemetry traces and metrics over OTLP (also on when OTEL_EXPORTER_OTLP_ENDPOINT or a signal's endpoint is set; default endpoint localhost:4318)")
}
