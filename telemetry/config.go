package telemetry

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Protocols of the OTLP exporters.
const (
	ProtoHTTP = "http/protobuf"
	ProtoGRPC = "grpc"
	// ProtoJSON is in the OTLP specification but not in acp-guard's
	// exporters: asking for it turns telemetry off with one warning, as
	// asking for grpc does in a build without -tags otlpgrpc.
	ProtoJSON = "http/json"
)

// EnvSessionID says how session ids are exported (the environment form
// of --otel-session-id).
const EnvSessionID = "ACP_GUARD_OTEL_SESSION_ID"

// Session id handling in attributes (EnvSessionID).
const (
	SessionHash = "hash" // default: the first 16 hex digits of its SHA-256
	SessionRaw  = "raw"  // the ACP session id as the agent made it: joins with the agent's own telemetry
	SessionOmit = "omit"
)

// MaxFlush bounds how long telemetry may delay the end of a session,
// whatever the collector does: the flush at Close gets at most this long
// (less if OTEL_EXPORTER_OTLP_TIMEOUT says less). It leaves a tenth of a
// second for the exporters to return and the process to exit, so that
// telemetry delays an exit by less than a second.
const MaxFlush = 900 * time.Millisecond

// Settings say which signals to export and how. The exporters read the
// endpoint, headers, TLS and compression from OTEL_* themselves.
type Settings struct {
	Traces, Metrics             bool
	TraceProto, MetricProto     string
	SessionID                   string // SessionHash, SessionRaw or SessionOmit
	ServiceVersion, ServiceName string // defaults: the binary's version, "acp-guard"
	// Flush is the deadline of the flush at Close: MaxFlush, or the
	// OTLP timeout when it is shorter.
	Flush time.Duration
	// Getenv is where the OTLP/HTTP exporters read their settings
	// (endpoint, headers, TLS…): FromEnv's getenv; nil: os.Getenv.
	Getenv func(string) string
}

// FromEnv decides, from the environment (getenv) and the --otel flag,
// whether telemetry is on and with which protocols. ok is false when it
// is off. An error names the variable at fault; the caller logs it and
// runs without telemetry (telemetry never stops an agent from starting).
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
	switch v := getenv(EnvSessionID); v {
	case "", SessionHash:
	case SessionRaw, SessionOmit:
		s.SessionID = v
	default:
		return s, false, fmt.Errorf("%s (acpguard.Config.OTelSessionID): %q is not hash, raw or omit", EnvSessionID, v)
	}
	if s.Flush, err = flushDeadline(getenv, s); err != nil {
		return s, false, err
	}
	s.Getenv = getenv
	return s, true, nil
}

// protocol is the signal's OTLP protocol: OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL,
// else OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf.
func protocol(getenv func(string) string, signal string) (string, error) {
	name := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	p := getenv(name)
	if p == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		p = getenv(name)
	}
	switch p {
	case "", ProtoHTTP:
		return ProtoHTTP, nil
	case ProtoGRPC:
		if !grpcBuilt {
			return "", fmt.Errorf("%s: %q: %w; use http/protobuf (port 4318)", name, p, errNoGRPC)
		}
		return ProtoGRPC, nil
	case ProtoJSON:
		return "", fmt.Errorf("%s: %q is not supported by acp-guard's OTLP exporters (use http/protobuf or grpc)", name, p)
	}
	return "", fmt.Errorf("%s: %q is not an OTLP protocol (http/protobuf or grpc)", name, p)
}

// flushDeadline is MaxFlush, or the shortest OTLP timeout of the signals
// exported when it is shorter: OTEL_EXPORTER_OTLP_<SIGNAL>_TIMEOUT, else
// OTEL_EXPORTER_OTLP_TIMEOUT (milliseconds, as the specification says).
func flushDeadline(getenv func(string) string, s Settings) (time.Duration, error) {
	d := MaxFlush
	for _, sig := range []struct {
		on   bool
		name string
	}{{s.Traces, "TRACES"}, {s.Metrics, "METRICS"}} {
		if !sig.on {
			continue
		}
		name := "OTEL_EXPORTER_OTLP_" + sig.name + "_TIMEOUT"
		v := getenv(name)
		if v == "" {
			name = "OTEL_EXPORTER_OTLP_TIMEOUT"
			v = getenv(name)
		}
		if v == "" {
			continue
		}
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || ms < 0 {
			return 0, fmt.Errorf("%s: %q is not a number of milliseconds", name, v)
		}
		if t := time.Duration(ms) * time.Millisecond; t > 0 && t < d {
			d = t
		}
	}
	return d, nil
}

// errNoGRPC: a protocol setting asks for grpc in a build without it.
var errNoGRPC = errors.New("OTLP over gRPC is not built into this acp-guard (build it with -tags otlpgrpc)")

// ErrNotBuilt is New's error in a build without telemetry (-tags nootel).
var ErrNotBuilt = errors.New("this acp-guard was built without telemetry (-tags nootel)")
