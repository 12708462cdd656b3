package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/internal/acptest"
)

// The demo agent's unknown-error scenario fails every prompt with this
// text, which the embedded catalogue leaves unclassified.
const unknownText = "the demo frobnicator returned an unexpected value"

// fillSkeleton does what the author of a rule does to the skeleton
// `catalogue unknowns --skeleton` wrote: names the rule, gives it a code,
// a scope and a pattern, and a version to the overlay.
func fillSkeleton(t *testing.T, skeleton, version string) string {
	t.Helper()
	b, err := os.ReadFile(skeleton)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer(
		`"version": "FILL-1"`, `"version": "`+version+`"`,
		`"code": "FILL"`, `"code": "provider_unavailable"`,
		`"scope": "FILL"`, `"scope": "provider"`,
		`"regex": "FILL: an RE2 signature of: `+unknownText+`"`, `"regex": "(?i)\\bdemo frobnicator returned an unexpected value\\b"`,
		"local.unknown_1.v1", "demo.frobnicator_unexpected.v1",
	).Replace(string(b))
	return acptest.WriteFile(t, version+".json", s)
}

// providerErrorOf returns the providerError of a prompt's answer.
func providerErrorOf(t *testing.T, f acptest.Frame) map[string]any {
	t.Helper()
	var d struct {
		ProviderError map[string]any `json:"providerError"`
	}
	if f.Error == nil || json.Unmarshal(f.Error.Data, &d) != nil || d.ProviderError == nil {
		t.Fatalf("answer %s: want a ProviderError", f.Raw)
	}
	return d.ProviderError
}

// The field loop end to end through the built binary, on the file store
// and through NATS: a transcript with an unclassified failure →
// `catalogue unknowns` → skeleton → filled in → `catalogue test` →
// `catalogue publish` → a session started before the publish classifies
// its next failing turn with the new rule, reports catalogueVersion
// embedded+overlay, records the overlay, and its replay reaches the same
// verdicts.
func TestE2EOverlayFieldLoop(t *testing.T) {
	t.Parallel()
	for _, store := range []func(*testing.T) heldStore{fileStore, natsStore} {
		st := store(t)
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			first := filepath.Join(dir, "first.jsonl")
			p := startBin(t, nil, proxy(t, append([]string{"--record", first}, st.flags...), "--scenario", "unknown-error")...)
			p.Send(acptest.Initialize(1), acptest.SessionNew(2))
			p.Until("1")
			sid := sessionID(t, p.Until("2"))
			p.Send(acptest.Prompt(3, sid))
			if pe := providerErrorOf(t, lastFrame(p.Until("3"))); pe["code"] != "unclassified" {
				t.Fatalf("premise: the embedded catalogue classifies the demo's unknown error as %v", pe["code"])
			}
			p.Finish()

			out, stderr, code := runBin(t, nil, "", "catalogue", "unknowns", "--json", first)
			if code != 0 || !strings.Contains(out, `"shape":"`+unknownText+`"`) || !strings.Contains(out, `"count":1`) {
				t.Fatalf("unknowns: exit %d, stdout %q, stderr %q", code, out, stderr)
			}
			skeleton := filepath.Join(dir, "skeleton.json")
			if _, stderr, code := runBin(t, nil, "", "catalogue", "unknowns", "--skeleton", skeleton, first); code != 0 {
				t.Fatalf("unknowns --skeleton: exit %d: %s", code, stderr)
			}
			if _, _, code := runBin(t, nil, "", "catalogue", "test", skeleton); code != 1 {
				t.Errorf("catalogue test of the skeleton not filled in: exit %d, want 1", code)
			}
			filled := fillSkeleton(t, skeleton, "field-1")
			if out, stderr, code := runBin(t, nil, "", "catalogue", "test", filled); code != 0 {
				t.Fatalf("catalogue test of the filled skeleton: exit %d\n%s\n%s", code, out, stderr)
			}

			second := filepath.Join(dir, "second.jsonl")
			flags := append([]string{"--catalogue-overlay", "store", "--log-level", "info", "--record", second}, st.flags...)
			p = startBin(t, nil, proxy(t, flags, "--scenario", "unknown-error")...)
			p.Send(acptest.Initialize(1), acptest.SessionNew(2))
			p.Until("1")
			sid = sessionID(t, p.Until("2"))
			p.Send(acptest.Prompt(3, sid))
			before := providerErrorOf(t, lastFrame(p.Until("3")))
			embedded := catalogue.Default().Version()
			if before["code"] != "unclassified" || before["catalogueVersion"] != embedded {
				t.Errorf("before the publish: %v under %v, want unclassified under %s", before["code"], before["catalogueVersion"], embedded)
			}

			out, stderr, code = runBin(t, nil, "", append([]string{"catalogue", "publish", filled}, st.flags...)...)
			if code != 0 || !strings.Contains(out, embedded+"+field-1") {
				t.Fatalf("publish: exit %d, stdout %q, stderr %q", code, out, stderr)
			}
			if !p.Stderr.WaitFor("catalogue overlay validated") {
				t.Fatalf("the session never validated the published overlay: %s", p.Stderr.Tail(2000))
			}
			p.Send(acptest.Prompt(4, sid))
			after := providerErrorOf(t, lastFrame(p.Until("4")))
			if after["code"] != "provider_unavailable" || after["rule"] != "demo.frobnicator_unexpected.v1" || after["catalogueVersion"] != embedded+"+field-1" {
				t.Errorf("after the publish: %v by %v under %v, want provider_unavailable by the new rule under %s+field-1",
					after["code"], after["rule"], after["catalogueVersion"], embedded)
			}
			if _, code := p.Finish(); code != 0 {
				t.Errorf("proxy exit %d: %s", code, p.Stderr.Tail(2000))
			}

			// The transcript holds the overlay: its replay decides alike.
			rec, err := os.ReadFile(second)
			if err != nil || !strings.Contains(string(rec), `"dir":"catalogue","catalogue":"`+embedded+`+field-1","turn":2,"overlay":{`) {
				t.Errorf("transcript lacks the catalogue event of turn 2 (%v)", err)
			}
			out, stderr, code = runBin(t, nil, "", "replay", "--json", second)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if code != 0 || len(lines) != 2 || !strings.Contains(lines[0], `"catalogueVersion":"`+embedded+`"`) ||
				!strings.Contains(lines[1], `"rule":"demo.frobnicator_unexpected.v1"`) || !strings.Contains(lines[1], `"catalogueVersion":"`+embedded+`+field-1"`) {
				t.Errorf("replay: exit %d, stderr %q, turns:\n%s", code, stderr, out)
			}

			if out, _, code := runBin(t, nil, "", "classify", "--transcript", second, "--turn", "2"); code != 0 ||
				!strings.Contains(out, `"rule":"demo.frobnicator_unexpected.v1"`) {
				t.Errorf("classify --transcript --turn 2: exit %d, %s; want the overlay's verdict", code, out)
			}

			// A bad overlay is refused by publish, and --clear goes back.
			bad := acptest.WriteFile(t, "bad.json", strings.Replace(mustRead(t, filled), `"match": false`, `"match": true`, 1))
			if _, stderr, code := runBin(t, nil, "", append([]string{"catalogue", "publish", bad}, st.flags...)...); code != 1 || !strings.Contains(stderr, "catalogue overlay refused") {
				t.Errorf("publish of a bad overlay: exit %d, stderr %q; want 1 and a refusal", code, stderr)
			}
			if out, _, code := runBin(t, nil, "", append([]string{"catalogue", "publish", "--clear"}, st.flags...)...); code != 0 || !strings.Contains(out, embedded) {
				t.Errorf("publish --clear: exit %d, %q", code, out)
			}
		})
	}
}

// An overlay file given at start that does not validate is a
// configuration mistake: answered on the wire, said on stderr, exit 2.
// A good one classifies from the first turn, and an edit of the file is
// picked up at the next turn, without a restart.
func TestE2EOverlayFile(t *testing.T) {
	t.Parallel()
	good := acptest.WriteFile(t, "overlay.json", overlayDoc("file-1", "provider_unavailable"))
	bad := acptest.WriteFile(t, "bad.json", strings.Replace(overlayDoc("file-1", "provider_unavailable"), `"match":false`, `"match":true`, 1))
	out, stderr, code := runBin(t, nil, acptest.Initialize(1), proxy(t, []string{"--catalogue-overlay", bad}, "--scenario", "unknown-error")...)
	if code != 2 || !strings.Contains(stderr, "catalogue overlay refused") {
		t.Errorf("bad overlay: exit %d, stderr %q; want 2 and the refusal", code, stderr)
	}
	wireError(t, out, "--catalogue-overlay")

	p := startBin(t, nil, proxy(t, []string{"--catalogue-overlay", good, "--state-dir", t.TempDir()}, "--scenario", "unknown-error")...)
	p.Send(acptest.Initialize(1), acptest.SessionNew(2))
	p.Until("1")
	sid := sessionID(t, p.Until("2"))
	p.Send(acptest.Prompt(3, sid))
	embedded := catalogue.Default().Version()
	if pe := providerErrorOf(t, lastFrame(p.Until("3"))); pe["code"] != "provider_unavailable" || pe["catalogueVersion"] != embedded+"+file-1" {
		t.Errorf("with the overlay: %v under %v", pe["code"], pe["catalogueVersion"])
	}
	if err := os.WriteFile(good, []byte(overlayDoc("file-2", "provider_overloaded")), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Send(acptest.Prompt(4, sid))
	if pe := providerErrorOf(t, lastFrame(p.Until("4"))); pe["code"] != "provider_overloaded" || pe["catalogueVersion"] != embedded+"+file-2" {
		t.Errorf("after the edit: %v under %v", pe["code"], pe["catalogueVersion"])
	}
	if err := os.WriteFile(good, []byte(`{"version":"broken"`), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Send(acptest.Prompt(5, sid))
	if pe := providerErrorOf(t, lastFrame(p.Until("5"))); pe["catalogueVersion"] != embedded+"+file-2" {
		t.Errorf("after a broken edit: %v, want the catalogue in use kept", pe["catalogueVersion"])
	}
	p.Finish()
}

// overlayDoc is an overlay with one rule for the demo's unknown error.
func overlayDoc(version, code string) string {
	return `{"version":"` + version + `","rules":[{"id":"demo.frobnicator_unexpected.v1","tier":2,"adapter":"any","sources":["rpc_error"],
 "match":{"regex":"(?i)\\bdemo frobnicator returned an unexpected value\\b"},"code":"` + code + `","confidence":"medium","scope":"provider"}],
 "fixtures":[
  {"name":"+1","rule":"demo.frobnicator_unexpected.v1","match":true,"evidence":{"source":"rpc_error","message":"` + unknownText + `"}},
  {"name":"-1","rule":"demo.frobnicator_unexpected.v1","match":false,"code":"unclassified","evidence":{"source":"rpc_error","message":"notes: the frobnicator is a demo"}}]}`
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func lastFrame(fs []acptest.Frame) acptest.Frame { return fs[len(fs)-1] }
