//go:build !nootel

package telemetry

// GRPCBuilt tells the external tests whether this build exports over
// gRPC (-tags otlpgrpc).
const GRPCBuilt = grpcBuilt
