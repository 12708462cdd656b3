package bench

import (
	"sync"
	"testing"

	"github.com/acp-guard/acp-guard/internal/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

var (
	binsOnce sync.Once
	bins     Binaries
)

// binaries returns the programs the tests and benchmarks of this package
// run, built on first use (tests that do not run a program build nothing)
// and shared with the other packages' tests (testbin). They are built
// without -race: the benchmarks measure the program users run.
func binaries(tb testing.TB) Binaries {
	tb.Helper()
	binsOnce.Do(func() {
		bins = Binaries{Guard: testbin.Path(tb), ByteCopy: testbin.Program(tb, "./dev/bench/cmd/bytecopy")}
	})
	if bins.Guard == "" {
		tb.Fatal("the programs could not be built (see the first test that tried)")
	}
	return bins
}
