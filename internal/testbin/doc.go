// Package testbin builds the acp-guard binary for end-to-end tests.
//
// Tests that run the real program (over real pipes, with real child
// processes) call Path, which returns the path of ./cmd/acp-guard built
// with `go build` (Program does the same for another main package). The
// build is shared by every test process: it lives in a directory keyed by
// a hash of the sources, embedded files, go.mod/go.sum, Go release and
// build settings, and is made under a file lock, so the packages that
// `go test ./...` runs at once build and link the program once, and a
// second run of unchanged code builds nothing. A package's TestMain should
// call Cleanup (or use Main), which removes private builds. Under -short,
// Main skips the package's end-to-end tests (named TestE2E*).
//
// Environment: ACP_GUARD_TEST_BIN=/path/to/acp-guard tests that binary
// instead of building one; ACP_GUARD_TEST_RACE=1 builds with -race;
// ACP_GUARD_TEST_CACHE=DIR puts the shared builds in DIR (default
// acp-guard-testbin inside `go env GOCACHE`, so a fresh Go build cache is a
// cold start for them too), =off builds privately in every test process.
//
// It imports nothing from acp-guard; only tests import it.
package testbin
