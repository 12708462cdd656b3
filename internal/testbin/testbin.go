package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
)

var (
	once   sync.Once
	dir    string
	binary string
	err    error
)

// Path returns the path of an acp-guard binary built from this checkout,
// building it on the first call of the test process. It fails tb if the
// build fails. Setting ACP_GUARD_TEST_RACE=1 builds it with -race;
// setting ACP_GUARD_TEST_BIN to an executable uses that one instead of
// building (e.g. to test an installed or differently built binary).
func Path(tb testing.TB) string {
	tb.Helper()
	once.Do(func() {
		if p := os.Getenv("ACP_GUARD_TEST_BIN"); p != "" {
			binary, err = filepath.Abs(p)
			return
		}
		build()
	})
	if err != nil {
		tb.Fatalf("building acp-guard: %v", err)
	}
	return binary
}

// Cleanup removes the directory Path built into. Call it from TestMain
// after m.Run.
func Cleanup() {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

func build() {
	root, rerr := moduleRoot()
	if rerr != nil {
		err = rerr
		return
	}
	dir, err = os.MkdirTemp("", "acp-guard-testbin-")
	if err != nil {
		return
	}
	binary = filepath.Join(dir, "acp-guard")
	args := []string{"build", "-o", binary}
	if os.Getenv("ACP_GUARD_TEST_RACE") == "1" {
		args = append(args, "-race")
	}
	if tags := testTags(); tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, "./cmd/acp-guard")
	// go test puts its own GOROOT/bin first on PATH, so this is the go
	// command that is running the tests.
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, berr := cmd.CombinedOutput(); berr != nil {
		err = fmt.Errorf("go %v in %s: %w\n%s", args, root, berr, out)
	}
}

// testTags are the build tags the test binary was built with (go test
// -tags otlpgrpc, nootel…): the binary under test is built with them too.
func testTags() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "-tags" {
			return s.Value
		}
	}
	return ""
}

// moduleRoot is the directory holding go.mod, two levels above this file.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("testbin: cannot locate its own source file")
	}
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	if _, serr := os.Stat(filepath.Join(root, "go.mod")); serr != nil {
		return "", fmt.Errorf("testbin: no go.mod in %s: %w", root, serr)
	}
	return root, nil
}

// Main is a TestMain for packages that use Path: it runs the tests, then
// removes the built binary.
//
//	func TestMain(m *testing.M) { testbin.Main(m) }
func Main(m *testing.M) {
	home, err := Hermetic()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbin:", err)
		os.Exit(1)
	}
	code := m.Run()
	Cleanup()
	_ = os.RemoveAll(home)
	os.Exit(code)
}

// Hermetic gives the test process, and every acp-guard it starts, state
// and configuration directories of their own (XDG_STATE_HOME,
// XDG_CONFIG_HOME under a new temporary directory, returned) and clears
// the ACP_GUARD_* variables, so that no test reads the developer's
// configuration or shares the default state directory — its attempt log
// and its circuit store — with another test run.
func Hermetic() (string, error) {
	home, err := os.MkdirTemp("", "acp-guard-testhome-")
	if err != nil {
		return "", err
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "ACP_GUARD_") && k != "ACP_GUARD_TEST_BIN" && k != "ACP_GUARD_TEST_RACE" &&
			!strings.HasPrefix(k, "ACP_GUARD_INTEROP") && k != "ACP_GUARD_CACHE" && k != "ACP_GUARD_MEASURE_CIRCUITS" {
			os.Unsetenv(k)
		}
	}
	for _, k := range []string{"XDG_STATE_HOME", "XDG_CONFIG_HOME"} {
		dir := filepath.Join(home, strings.ToLower(strings.TrimPrefix(k, "XDG_")))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
		os.Setenv(k, dir)
	}
	return home, nil
}
