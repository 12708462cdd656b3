package archtest

import (
	"fmt"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/acp-guard/acp-guard"

// The import rules. Packages are named by their directory below the module
// root; "." is the root package, acpguard (the library). Dependencies
// point one way (ARCHITECTURE.md draws the map):
//
//	cmd → acpguard → internal/pipeline → replay → guard → transport / observers → classify ← catalogue
//
// with policy and circuit beside classify (the guard's), telemetry beside
// replay (the library's), and the internal leaves under everything.
//
// rules lists, for every package of the module, the module packages its
// non-test code may import besides the leaves. A package missing from it
// fails the test: a new package takes its place in the map on purpose.
var rules = map[string][]string{
	// The core, top to bottom.
	"cmd/acp-guard": {".", "replay", "telemetry", "guard", "transport", "observers", "classify", "catalogue", "policy", "circuit", "held", "presence",
		"internal/seam", // the engine inside the library's Catalogue
		"cmd/acp-guard/internal/stopsig", "cmd/acp-guard/internal/console",
		"demoagent"}, // the demo-agent command runs it
	// The library is the face: its types and entry points, which hand
	// every session to its wiring (internal/pipeline); it holds the
	// policy and catalogue it parses, and re-exports transport's pipes.
	".": {"internal/pipeline", "replay", "transport", "classify", "catalogue", "policy", "internal/seam"},
	// The wiring: every part of the core put together for one session;
	// it dials the one NATS connection its stores share (kvstore).
	"internal/pipeline": {"replay", "telemetry", "guard", "transport", "observers", "classify", "catalogue", "policy", "circuit", "held", "presence", "internal/kvstore"},
	"replay":            {"transport", "observers", "classify"},                               // the player drives any transport.Hooks; the library wires the guard in
	"telemetry":         {"guard", "transport", "observers", "classify", "policy", "circuit"}, // it wraps the guard's hooks
	"guard":             {"transport", "observers", "classify", "policy", "circuit", "held"},
	"transport":         {},
	"observers":         {"classify"},
	"catalogue":         {"classify"},
	"classify":          {},
	"policy":            {"classify"}, // the registry of codes, for per-code overrides
	"circuit":           {"internal/kvstore"},
	"held":              {"internal/kvstore"}, // held prompts in the circuits' store, for operators
	"presence":          {"internal/kvstore"}, // live sessions' records beside them, for the console

	// Beside the core, under dev/: development tools and tests that use
	// it from outside.
	"dev/fleet":                    {"circuit", "internal/freeport"}, // a load generator against the circuit store
	"dev/fleet/cmd/fleet":          {"dev/fleet"},
	"dev/fleet/cmd/fleet-cluster":  {"dev/fleet", "circuit", "internal/kvstore"}, // the fleet on a NATS cluster across network namespaces; its monitoring connection is kvstore.DialNATS
	"dev/bench":                    {},
	"dev/bench/cmd/bytecopy":       {"dev/bench"},
	"dev/bench/cmd/e2ebench":       {"dev/bench"},
	"dev/bench/cmd/otlpsink":       {"dev/bench"},
	"dev/interop/fakeprovider":     {},
	"dev/interop/capture":          {"dev/interop/fakeprovider"},
	"dev/interop/suite":            {".", "dev/interop/capture", "dev/interop/fakeprovider", "internal/acptest"}, // the library's stable names only
	"dev/interop/cmd/capture":      {"dev/interop/capture"},
	"dev/interop/cmd/fakeprovider": {"dev/interop/fakeprovider"},
	"dev/interop/cmd/testsummary":  {},
	"npm":                          {}, // tests only: the npm packages installed and run through npx

	// Test support: only tests import these (and the packages above that
	// name one).
	"demoagent":          {},
	"internal/testbin":   {},
	"internal/acptest":   {"internal/testbin"},
	"internal/acpschema": {},
	"internal/natstest":  {"internal/freeport"},
	"internal/archtest":  {},
	// Ports below the ephemeral range for servers restarted on theirs
	// (natstest's, the fleet's).
	"internal/freeport": {},

	// Beneath the stores: the revisioned key-value layer and its one
	// opener (the registry of backends: file, NATS, memory) the circuit,
	// held-prompt, presence and overlay stores are typed views over.
	"internal/kvstore": {},

	// The command's way to what the library keeps behind its API (the
	// engine inside a Catalogue); the library fills it in.
	"internal/seam": {"classify"},

	// The leaves.
	"internal/ansi":                  {},
	"internal/jsonscan":              {},
	"internal/safefile":              {},
	"internal/syncio":                {},
	"cmd/acp-guard/internal/stopsig": {},
	// The lowest leaf: every OS difference (TestSyscallOnlyInPlatform).
	"internal/platform": {},
	// The shapes a session reports in (events, turn reports, the
	// ProviderError, the exit status): the library's stable leaf, beneath
	// everything that builds or reads them.
	"event": {},

	// The console's web page: it reads the stores' types and takes its
	// actions through the command's (the held action path).
	"cmd/acp-guard/internal/console": {"circuit", "held", "presence"},
}

// leaves import nothing of the module but each other (safefile and event
// build on platform), and every package may import them.
var leaves = []string{"internal/ansi", "internal/jsonscan", "internal/safefile", "internal/syncio", "internal/platform", "event"}

// testSupport may be imported by any package's tests.
var testSupport = []string{"demoagent", "internal/testbin", "internal/acptest", "internal/acpschema", "internal/natstest"}

// testRules are the further arrows a package's tests may draw (from
// _test.go files, which no other package imports, so they cannot make a
// cycle), each for a reason.
var testRules = map[string][]string{
	// The end-to-end tests read the transcript the built binary recorded
	// (--record): the transcript format is package replay's.
	"transport":          {"replay"},
	"internal/acpschema": {"replay", "policy"}, // and read the attempt log the operator actions wrote
	// The guard's tests also run it with the real catalogue, and replay
	// what the binary recorded through the library's Replay.
	"guard": {"replay", "catalogue", "."},
	// Golden transcripts are played through the whole pipeline, the
	// library's Replay, with policies written by the tests.
	"replay": {".", "policy"},
	// The library's notice channels are checked against the guard's.
	".": {"guard"},
	// The real catalogue binds the adapters' text projections and is
	// checked against them.
	"catalogue": {"observers"},
	"observers": {"catalogue"},
}

// graph maps a package to the module packages it imports: from its
// non-test files (prod) and from its _test.go files (test).
type graph map[string]struct{ prod, test []string }

// readGraph parses every Go file of the module (imports only; build tags
// ignored, so files built only with -tags interop count too).
func readGraph(t *testing.T, root string) graph {
	t.Helper()
	g := graph{}
	fset := token.NewFileSet()
	walkTree(t, root, func(rel string) {
		if !strings.HasSuffix(rel, ".go") || strings.Contains("/"+rel, "/testdata/") {
			return
		}
		f, err := parser.ParseFile(fset, root+"/"+rel, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		pkg := path.Dir(rel)
		e := g[pkg]
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			var dep string
			switch {
			case p == module:
				dep = "."
			case strings.HasPrefix(p, module+"/"):
				dep = strings.TrimPrefix(p, module+"/")
			default:
				continue
			}
			if strings.HasSuffix(rel, "_test.go") {
				e.test = append(e.test, dep)
			} else {
				e.prod = append(e.prod, dep)
			}
		}
		g[pkg] = e
	})
	return g
}

// violations checks g against the rules and returns one line per wrong
// arrow or unknown package, sorted.
func violations(g graph) []string {
	var out []string
	for pkg, e := range g {
		allowed, ok := rules[pkg]
		if !ok {
			out = append(out, fmt.Sprintf("%s: not in the import rules (internal/archtest/imports_test.go): give it its place", pkg))
			continue
		}
		for _, dep := range e.prod {
			if !slices.Contains(allowed, dep) && !slices.Contains(leaves, dep) {
				out = append(out, fmt.Sprintf("%s imports %s: not allowed", pkg, dep))
			}
		}
		for _, dep := range e.test {
			if dep != pkg && !slices.Contains(allowed, dep) && !slices.Contains(leaves, dep) &&
				!slices.Contains(testSupport, dep) && !slices.Contains(testRules[pkg], dep) {
				out = append(out, fmt.Sprintf("%s's tests import %s: not allowed", pkg, dep))
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func TestImportRules(t *testing.T) {
	g := readGraph(t, moduleRoot(t))
	for _, v := range violations(g) {
		t.Error(v)
	}
	// The table names no package that is gone.
	for pkg := range rules {
		if _, ok := g[pkg]; !ok {
			t.Errorf("import rules name %s, which has no Go files", pkg)
		}
	}
	// Leaves stay leaves.
	for _, l := range leaves {
		if len(rules[l]) != 0 {
			t.Errorf("leaf %s may import %v", l, rules[l])
		}
	}
}

// TestImportRulesCatchWrongArrows checks the checker: arrows the map
// forbids, and a package nobody placed, are reported.
func TestImportRulesCatchWrongArrows(t *testing.T) {
	for _, tt := range []struct {
		name string
		g    graph
		want string
	}{
		{"transport imports observers", graph{"transport": {prod: []string{"observers"}}}, "transport imports observers: not allowed"},
		{"classify imports catalogue", graph{"classify": {prod: []string{"catalogue"}}}, "classify imports catalogue: not allowed"},
		{"guard imports replay", graph{"guard": {prod: []string{"replay"}}}, "guard imports replay: not allowed"},
		{"replay imports guard", graph{"replay": {prod: []string{"guard"}}}, "replay imports guard: not allowed"},
		{"replay imports the library", graph{"replay": {prod: []string{"."}}}, "replay imports .: not allowed"},
		{"anything imports cmd", graph{".": {prod: []string{"cmd/acp-guard"}}}, ". imports cmd/acp-guard: not allowed"},
		{"production code imports test support", graph{"guard": {prod: []string{"internal/testbin"}}}, "guard imports internal/testbin: not allowed"},
		{"a test draws an undeclared arrow", graph{"classify": {test: []string{"transport"}}}, "classify's tests import transport: not allowed"},
		{"an unplaced package", graph{"newpkg": {prod: []string{"classify"}}}, "newpkg: not in the import rules"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := violations(tt.g)
			if len(got) != 1 || !strings.HasPrefix(got[0], tt.want) {
				t.Errorf("got %q, want one violation %q", got, tt.want)
			}
		})
	}
	ok := graph{
		"guard":     {prod: []string{"transport", "internal/jsonscan"}, test: []string{"replay", "internal/testbin", "guard"}},
		"transport": {prod: []string{"internal/ansi"}},
	}
	if got := violations(ok); len(got) != 0 {
		t.Errorf("allowed arrows reported: %q", got)
	}
}
