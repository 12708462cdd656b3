package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Configuration mistakes that must not pass in silence (README.md,
// "Configure"; docs/OPERATIONS.md): flag errors of the proxy are answered on
// the wire like any other configuration error; the proxy without an agent
// prints its usage on stderr and exits 2; an ACP_GUARD_* variable that
// names nothing is a warning with a suggestion.

// isProxy reports whether cmd runs the proxy: the root, or `run`.
func isProxy(cmd *cobra.Command) bool {
	return cmd == cmd.Root() || cmd.Name() == "run" && cmd.Parent() == cmd.Root()
}

// flagError is the root's FlagErrorFunc: a flag the proxy cannot parse
// (an unknown flag, "--grace abc", a flag without its value) is a
// configuration error — stderr, the client's first request answered on
// the wire, exit 2; for any other command, a usage error.
func flagError(s *streams) func(*cobra.Command, error) error {
	return func(cmd *cobra.Command, err error) error {
		if hint := flagHint(cmd.Flags(), err); hint != "" {
			err = fmt.Errorf("%w (did you mean --%s?)", err, hint)
		}
		if isProxy(cmd) {
			return failStartup(s, err)
		}
		return withCode(exitUsage, err)
	}
}

// flagHint is the flag an unknown one is a near-miss of ("" : none).
func flagHint(fs *pflag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return closest(name, names)
}

// closest returns the candidate within edit distance 2 of word (or having
// it as a prefix), the nearest first; "" when none is.
func closest(word string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := editDistance(strings.ToLower(word), strings.ToLower(c))
		if strings.HasPrefix(c, word) && len(word) >= 3 {
			d = min(d, 1)
		}
		if d < bestD || d == bestD && c < best {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// failNoAgent is the proxy started without an agent: its usage on stderr
// (never on stdout, the protocol's channel), the client's first request
// answered on the wire — unless stdin is a terminal (a person typed
// `acp-guard`) — and exit 2.
func failNoAgent(s *streams, cmd *cobra.Command) error {
	fmt.Fprint(s.err, cmd.UsageString())
	const problem = "no agent command given: acp-guard [flags] -- AGENT [ARGS...]"
	fmt.Fprintf(s.err, "\nacp-guard: %s\n", problem)
	if !isTerminal(s.in) {
		answerStartup(s.in, s.out, problem, startupWindow)
	}
	return withCode(exitUsage, errSilent)
}

// isTerminal reports whether r is a character device (a terminal; also
// /dev/null, which holds no request to answer anyway).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// otherEnv are the ACP_GUARD_* variables that are not a flag's: read by
// acp-guard itself, and by its test and interop tooling (prefixes ending
// in "_").
var otherEnv = []string{envPrefix + "CONFIG", envPrefix + "CPUPROFILE", envPrefix + "MEMPROFILE", envPrefix + "OTEL_SESSION_ID",
	envPrefix + "TEST_", envPrefix + "INTEROP", envPrefix + "CACHE", envPrefix + "MEASURE_",
	envPrefix + "PLATFORM_"} // the macOS watchdog's own process (internal/platform)

// unknownEnv lists the ACP_GUARD_* variables of environ that name no
// setting of fs, each with the nearest known name ("" : none near).
func unknownEnv(fs *pflag.FlagSet, environ []string) [][2]string {
	if fs == nil {
		return nil
	}
	known := map[string]bool{}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !notConfigurable[f.Name] {
			known[envName(f.Name)] = true
			names = append(names, envName(f.Name))
		}
	})
	for _, n := range otherEnv {
		if !strings.HasSuffix(n, "_") {
			names = append(names, n)
		}
	}
	var out [][2]string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || known[name] || isOtherEnv(name) {
			continue
		}
		out = append(out, [2]string{name, closest(name, names)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

func isOtherEnv(name string) bool {
	for _, n := range otherEnv {
		if name == n || strings.HasSuffix(n, "_") && strings.HasPrefix(name, n) || n == envPrefix+"INTEROP" && strings.HasPrefix(name, n+"_") {
			return true
		}
	}
	return false
}
