package testbin

import (
	"flag"
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

// ShortSkip is the -skip pattern Main applies under -short.
const ShortSkip = "^TestE2E"

// built is one program built for this test process.
type built struct {
	once sync.Once
	path string
	err  error
}

var (
	mu       sync.Mutex
	programs = map[string]*built{}
	private  []string // directories of private builds, removed by Cleanup
)

// Path returns the path of an acp-guard binary built from this checkout,
// building it on the first call of the test process. It fails tb if the
// build fails. Setting ACP_GUARD_TEST_RACE=1 builds it with -race;
// setting ACP_GUARD_TEST_BIN to an executable uses that one instead of
// building (e.g. to test an installed or differently built binary).
func Path(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("ACP_GUARD_TEST_BIN"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			tb.Fatalf("ACP_GUARD_TEST_BIN: %v", err)
		}
		return abs
	}
	return Program(tb, "./cmd/acp-guard")
}

// Program returns the path of the main package pkg (a path relative to the
// module root, such as "./dev/bench/cmd/bytecopy") built from this checkout,
// building it on the first call of the test process. The build is shared
// with every other test process through a directory keyed by the
// program's content (see shared.go): of the packages that `go test ./...`
// runs at once, one builds and the others wait for it and reuse its
// binary.
func Program(tb testing.TB, pkg string) string {
	tb.Helper()
	mu.Lock()
	b := programs[pkg]
	if b == nil {
		b = &built{}
		programs[pkg] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.path, b.err = build(pkg) })
	if b.err != nil {
		tb.Fatalf("building %s: %v", pkg, b.err)
	}
	return b.path
}

// Cleanup removes the directories of private builds (see build). Call it
// from TestMain after m.Run; shared builds stay for the next test process.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	for _, d := range private {
		_ = os.RemoveAll(d)
	}
	private = nil
}

// build builds pkg into the shared directory, or, when that cannot be
// used, into a private temporary directory of this process.
func build(pkg string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	race := os.Getenv("ACP_GUARD_TEST_RACE") == "1"
	if dir := sharedDir(); dir != "" {
		p, serr := buildShared(root, dir, pkg, race)
		if serr == nil {
			return p, nil
		}
		fmt.Fprintf(os.Stderr, "testbin: shared build of %s in %s failed, building privately: %v\n", pkg, dir, serr)
	}
	d, err := os.MkdirTemp("", "acp-guard-testbin-")
	if err != nil {
		return "", err
	}
	mu.Lock()
	private = append(private, d)
	mu.Unlock()
	out := filepath.Join(d, filepath.Base(pkg))
	return out, goBuild(root, pkg, out, race)
}

// goBuild runs `go build -o out pkg` in the module root.
func goBuild(root, pkg, out string, race bool) error {
	args := []string{"build", "-o", out}
	env := os.Environ()
	if race {
		args = append(args, "-race") // needs cgo
	} else {
		// As `make build` builds it: static, without symbol tables
		// (stack traces keep their names), so that what the tests
		// measure (TestE2EIdleRSS) is the binary that ships.
		args = append(args, "-trimpath", "-ldflags=-s -w")
		env = append(env, "CGO_ENABLED=0")
	}
	if tags := testTags(); tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, pkg)
	// go test puts its own GOROOT/bin first on PATH, so this is the go
	// command that is running the tests.
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v in %s: %w\n%s", args, root, err, out)
	}
	return nil
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

// Main is a TestMain for packages that use Path: it makes the process
// hermetic, runs the tests, then removes private builds.
//
// With -short (make test-short) and no -skip of the caller's, it skips the
// end-to-end tests of the built program, which the project names TestE2E*
// (they take seconds each by design: grace periods, slow readers,
// cooldowns, real processes): -short is the quick loop of unit,
// virtual-clock and in-process tests; make test runs everything.
//
//	func TestMain(m *testing.M) { testbin.Main(m) }
func Main(m *testing.M) {
	flag.Parse()
	if skip := flag.Lookup("test.skip"); testing.Short() && skip != nil && skip.Value.String() == "" {
		_ = skip.Value.Set(ShortSkip)
	}
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
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "ACP_GUARD_") && k != "ACP_GUARD_TEST_BIN" && k != "ACP_GUARD_TEST_RACE" && k != "ACP_GUARD_TEST_CACHE" &&
			!strings.HasPrefix(k, "ACP_GUARD_INTEROP") && !strings.HasPrefix(k, "ACP_GUARD_TEST_NPM_") && k != "ACP_GUARD_CACHE" && k != "ACP_GUARD_MEASURE_CIRCUITS" {
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
