package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/replay"
)

// writeReproduce follows a replay's divergences (the agent answers
// requests the recording's proxy sent and this replay did not: it decided
// differently) with what the recording ran with that this replay did not,
// and the command line that replays with the recording's configuration.
// What a transcript cannot hold — the state of circuits shared with
// other sessions, acp-guard's own code — is named when it may be the
// cause.
func writeReproduce(w io.Writer, o *replayOptions, path string, events []replay.Event, cfg acpguard.Config) {
	m, _ := replay.MetaOf(events)
	r := &reproduction{o: o, m: m}
	r.fallback(r.policy(path))
	r.settings()
	r.untracked(cfg)
	r.write(w, path)
}

// reproduction is what writeReproduce finds, comparing the replay's
// options o with the recording's meta line m.
type reproduction struct {
	o     *replayOptions
	m     replay.Event
	diffs []string // how this replay differs from the recording
	args  []string // the flags that replay as the recording ran
	state []string // what the transcript cannot give back
}

func (r *reproduction) add(flag string, vals ...string) {
	r.args = append(r.args, flag)
	r.args = append(r.args, vals...)
}

// policy compares the policies, and returns the --policy file that
// replays with the recording's ("" when this replay already does).
func (r *reproduction) policy(path string) string {
	o, m := r.o, r.m
	switch {
	case o.policy != "" && m.Policy != nil:
		r.diffs = append(r.diffs, "this replay decided with --policy "+o.policy+", the recording with the policy its meta line records")
	case m.Policy == nil:
		return r.unrecordedPolicy(path)
	default:
		if _, err := policy.Parse(m.Policy); err != nil {
			r.state = append(r.state, "POLICY.json: a valid form of the recorded policy (the meta line's is not valid)")
			return "POLICY.json"
		}
	}
	return ""
}

// unrecordedPolicy is policy for a transcript whose meta line records no
// policy: the one kept beside it, if any, else the user's to supply.
func (r *reproduction) unrecordedPolicy(path string) string {
	o, m := r.o, r.m
	policyFile := besidePolicy(path)
	what := "the transcript does not record the policy its proxy ran under"
	if m.Version != "" {
		what += " (acp-guard " + m.Version + " wrote it)"
	}
	if o.policy == "" {
		what += ", so this replay decided with the default policy, which never retries, waits or switches"
	} else {
		what += ", and this replay's --policy " + o.policy + " decided otherwise"
	}
	r.diffs = append(r.diffs, what)
	if policyFile != "" && policyFile != o.policy {
		return policyFile
	}
	// Nothing beside the transcript, or what this replay already decided
	// with: the recorded policy is the user's to supply.
	what = "POLICY.json: the policy document the recorded session ran under"
	if o.policy != "" {
		what += " (not --policy " + o.policy + ", which decided otherwise)"
	}
	r.state = append(r.state, what)
	return "POLICY.json"
}

// fallback adds --policy policyFile (when set) and compares the fallback
// models.
func (r *reproduction) fallback(policyFile string) {
	o, m := r.o, r.m
	if policyFile != "" {
		r.add("--policy", policyFile)
		// With --policy the recorded fallback models no longer apply by
		// themselves (acpguard.Config: they go with the recorded policy).
		if len(m.Fallback) > 0 && o.fallback == nil {
			r.add("--fallback-models", strings.Join(m.Fallback, ","))
		}
	}
	if o.fallback != nil {
		r.diffs = append(r.diffs, fmt.Sprintf("--fallback-models %s (the recording: %s)", strings.Join(o.fallback, ","), listOrNone(m.Fallback)))
		if len(m.Fallback) > 0 && policyFile != "" {
			r.add("--fallback-models", strings.Join(m.Fallback, ","))
		}
	}
}

// settings compares the rest of the options with what the meta line
// records (or, for stores, cannot record).
func (r *reproduction) settings() {
	o, m := r.o, r.m
	if o.adapter != "" && o.adapter != m.Adapter {
		r.diffs = append(r.diffs, fmt.Sprintf("--adapter %s (the recording: %s)", o.adapter, orNone(m.Adapter)))
	}
	if o.stall > 0 && o.stall.Milliseconds() != m.StallTimeoutMs {
		r.diffs = append(r.diffs, fmt.Sprintf("--stall-timeout %v (the recording: %s)", o.stall, stallOf(m.StallTimeoutMs)))
	}
	if o.circuits.store != "" {
		r.diffs = append(r.diffs, "--circuits "+o.circuits.store+" (the replay's circuits hold what that store holds now)")
	}
	if o.circuits.namespace != "" && o.circuits.namespace != m.CircuitNamespace {
		r.diffs = append(r.diffs, fmt.Sprintf("--circuit-namespace %s (the recording: %s)", o.circuits.namespace, orNone(m.CircuitNamespace)))
	}
	if o.stateDir != "" {
		r.diffs = append(r.diffs, "--state-dir "+o.stateDir+" (the attempt log there, and the retry budgets it counts, are today's, not the recording's)")
	}
}

// untracked names what may differ that no flag replays: the catalogue,
// shared circuits, and acp-guard's own version.
func (r *reproduction) untracked(cfg acpguard.Config) {
	o, m := r.o, r.m
	if v := cfg.Catalogue.Version(); m.Catalogue != "" && v != m.Catalogue {
		// Not part of the command line: an older catalogue is rarely at
		// hand, and a newer one seldom decides otherwise.
		from := "the embedded catalogue"
		if o.catalogue != "" {
			from = "--catalogue " + o.catalogue
		}
		by := "the acp-guard that recorded"
		if m.Version != "" {
			by = "acp-guard " + m.Version
		}
		r.state = append(r.state, fmt.Sprintf("this replay classified with catalogue %s (%s), the recording with %s; if the decision still differs, add --catalogue FILE with that catalogue (`acp-guard catalogue export` of %s)", v, from, m.Catalogue, by))
	}
	if m.Circuits == "file" || m.Circuits == "nats" {
		r.state = append(r.state, fmt.Sprintf("the recording shared circuits (%s) with other sessions; what they held then is not in the transcript, and the replay's circuits start closed", m.Circuits))
	}
	if m.Version != "" && m.Version != versionString() {
		r.state = append(r.state, fmt.Sprintf("the recording was made by acp-guard %s, this is %s", m.Version, versionString()))
	}
}

// write reports what r found about the transcript at path.
func (r *reproduction) write(w io.Writer, path string) {
	p := "acp-guard: replay: " + path + ": "
	if len(r.diffs) == 0 {
		fmt.Fprintf(w, "%sthe recording decided differently, though this replay ran with everything its meta line records (policy, fallback models, adapter, catalogue %s, stall timeout, jitter seed)\n", p, orNone(r.m.Catalogue))
	} else {
		fmt.Fprintf(w, "%sthe recording decided differently: %s\n", p, strings.Join(r.diffs, "; "))
	}
	if len(r.args) > 0 || len(r.diffs) > 0 {
		cmd := append([]string{"acp-guard", "replay"}, r.args...)
		fmt.Fprintf(w, "%sto reproduce the recorded decision: %s\n", p, shellLine(append(cmd, path)))
	}
	for _, s := range r.state {
		fmt.Fprintf(w, "%s  %s\n", p, s)
	}
}

// besidePolicy is the policy document kept beside a golden transcript
// (x.policy.json beside x.jsonl: replay/doc.go, "Golden transcripts"), ""
// when there is none.
func besidePolicy(path string) string {
	p := strings.TrimSuffix(path, ".jsonl") + ".policy.json"
	if p == path {
		return ""
	}
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
		return p
	}
	return ""
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ",")
}

func stallOf(ms int64) string {
	if ms <= 0 {
		return "off"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

// plainArg is an argument a POSIX shell takes as it is.
var plainArg = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_./:=@,+%-]+$`) })

// shellLine is a command line a POSIX shell reads back as args.
func shellLine(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if plainArg().MatchString(a) {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
