package telemetry

import (
	"errors"
	"fmt"
	"strings"
)

// Protocols of the OTLP exporters.
const (
	ProtoHTTP = "http/protobuf"
	ProtoGRPC = "grpc"
)

// Session id handling in attributes (ACP_GUARD_OTEL_SESSION_ID).
const (
	SessionHash = "hash" // default: the first 16 hex digits of its SHA-256
	SessionRaw  = "raw"
	SessionOmit = "omit"
)

// Settings say which signals to export and how. The exporters read the
// endpoint, headers, timeout, TLS and compression from OTEL_* themselves.
type Settings struct {
	Traces, Metrics             bool
	TraceProto, MetricProto     string
	SessionID                   string // SessionHash, SessionRaw or SessionOmit
	ServiceVersion, ServiceName string // defaults: the binary's version, "acp-guard"
}

// FromEnv decides, from the environment (getenv) and the --otel flag,
// whether telemetry is on and with which protocols. ok is false when it
// is off.
func FromEnv(getenv func(string) string, flag bool) (s Settings, ok bool, err error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return s, false, nil
	}
	any := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || flag
	s.Traces = (any || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "") && getenv("OTEL_TRACES_EXPORTER") != "none"
	s.Metrics = (any || getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "") && getenv("OTEL_METRICS_EXPORTER") != "none"
	if !s.Traces && !s.Metrics {
		return s, false, nil
	}
	if s.TraceProto, err = protocol(getenv, "TRACES"); err != nil {
		return s, false, err
	}
	if s.MetricProto, err = protocol(getenv, "METRICS"); err != nil {
		return s, false, err
	}
	s.SessionID = SessionHash
	switch v := getenv("ACP_GUARD_OTEL_SESSION_ID"); v {
	case "", SessionHash:
	case SessionRaw, SessionOmit:
		s.SessionID = v
	default:
		return s, false, fmt.Errorf("ACP_GUARD_OTEL_SESSION_ID: %q is not hash, raw or omit", v)
	}
	return s, true, nil
}

// protocol is the signal's OTLP protocol: OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL,
// else OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf.
func protocol(getenv func(string) string, signal string) (string, error) {
	p := getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")
	if p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p {
	case "", ProtoHTTP:
		return ProtoHTTP, nil
	case ProtoGRPC:
		return ProtoGRPC, nil
	}
	return "", fmt.Errorf("OTEL_EXPORTER_OTLP_%s_PROTOCOL: %q is not supported (http/protobuf or grpc)", signal, p)
}

// ErrNotBuilt is New's error in a build without telemetry (-tags nootel).
var ErrNotBuilt = errors.New("this acp-guard was built without telemetry (-tags nootel)")
