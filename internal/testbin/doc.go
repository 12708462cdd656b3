// Package testbin builds the acp-guard binary for end-to-end tests.
//
// Tests that run the real program (over real pipes, with real child
// processes) call Path, which builds ./cmd/acp-guard once per test process
// with `go build` (and the build tags of the test binary: go test -tags
// otlpgrpc tests a binary built with them) into a private temporary
// directory and returns the executable's path. A package's TestMain should call Cleanup after the
// tests to remove that directory.
//
// Environment: ACP_GUARD_TEST_BIN=/path/to/acp-guard tests that binary
// instead of building one; ACP_GUARD_TEST_RACE=1 builds with -race.
//
// It imports nothing from acp-guard; only tests import it.
package testbin
