//go:build !otlpgrpc || nootel

package telemetry

// grpcBuilt: OTLP/gRPC is left out of this build (-tags otlpgrpc puts
// it in); FromEnv names the variable asking for it, and telemetry stays
// off with that warning.
const grpcBuilt = false
