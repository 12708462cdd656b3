package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/policy"
)

// runPolicyCLI runs acp-guard with args and returns its exit code and output.
func runPolicyCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestPolicyCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"version":1,
	 "transient":{"retry":{"enabled":true,"max_retries":3,"initial_interval_seconds":5},"wait_for_reset":{"enabled":true,"max_wait_seconds":300},"on_exhausted":"skip"},
	 "hard":{"on_exhausted":"stop"},"fallback_models":["model-b"]}`)
	bad := write("bad.json", `{"version":1,"transient":{"retry":{"enabled":true,"max_retries":0,"initial_interval_seconds":5},"on_exhausted":"skip"}}`)
	broken := write("broken.json", "{\"version\":1,\n oops}")
	codes := write("codes.json", `{"hard":{"on_exhausted":"stop"},"codes":{"quota_limited":{"retry":{"max_retries":1,"initial_interval_seconds":60},"on_exhausted":"skip"}}}`)
	badCodes := write("badcodes.json", `{"codes":{"auth_required":{"retry":{"max_retries":2,"initial_interval_seconds":1}},"context_overflow":{}}}`)
	big := write("big.json", strings.Repeat(" ", 1<<20+1))

	for _, tt := range []struct {
		name        string
		stdin       string
		args        []string
		code        int
		out, errOut string
	}{
		{"valid document prints its schedule", "", []string{"policy", "check", good}, 0,
			"transient: retry after up to 5s, 10s, 20s, then skip; wait for a trusted reset up to 5m0s (once)\nhard: stop immediately\nfallback models: model-b\n" +
				"always: no retry before a provider's retry-after or reset; auth and credential failures never retried\n" +
				"\nnormalized document:\n" + string(mustNormalized(t, good)), ""},
		{"invalid document: field-addressed errors, exit 1", "", []string{"policy", "check", bad}, 1, "",
			bad + ": transient.retry.max_retries: must be 1–10 when retry is enabled (got 0)\n"},
		{"per-code overrides are shown", "", []string{"policy", "check", codes}, 0,
			"transient: skip immediately\nhard: stop immediately\ncode quota_limited: retry after up to 1m0s, then skip\n" +
				"always: no retry before a provider's retry-after or reset; auth and credential failures never retried\n" +
				"\nnormalized document:\n" + string(mustNormalized(t, codes)), ""},
		{"per-code overrides are validated by field", "", []string{"policy", "check", badCodes}, 1, "",
			badCodes + ": codes.auth_required.retry.enabled: must be false: auth and credential failures are never retried\n" +
				badCodes + ": codes.context_overflow: code of class request: only transient and hard codes are configurable\n"},
		{"syntax error names the line", "", []string{"policy", "check", broken}, 1, "",
			"acp-guard: " + broken + ": policy: line 2, column 2: invalid character 'o' looking for beginning of object key string\n"},
		{"legacy from stdin", `"try_next"`, []string{"policy", "check", "-"}, 0,
			"transient: skip immediately\nhard: skip immediately\n\nnormalized document:\n" + string(policy.Default().Normalized()), ""},
		{"normalized JSON", `"stop"`, []string{"policy", "check", "--json", "-"}, 0,
			strings.ReplaceAll(string(policy.Default().Normalized()), `"skip"`, `"stop"`), ""},
		{"missing file", "", []string{"policy", "check", filepath.Join(dir, "none.json")}, 1, "",
			"acp-guard: open " + filepath.Join(dir, "none.json") + ": no such file or directory\n"},
		{"oversized file", "", []string{"policy", "check", big}, 1, "",
			"acp-guard: " + big + ": policy document larger than 1048576 bytes\n"},
		{"no file is a usage error", "", []string{"policy", "check"}, 2, "",
			"acp-guard: accepts 1 arg(s), received 0\n"},
		{"default", "", []string{"policy", "default"}, 0, string(policy.Default().Normalized()), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runPolicyCLI(t, tt.stdin, tt.args...)
			if code != tt.code {
				t.Errorf("exit code: got %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			if out != tt.out {
				t.Errorf("stdout:\ngot  %q\nwant %q", out, tt.out)
			}
			if errOut != tt.errOut {
				t.Errorf("stderr:\ngot  %q\nwant %q", errOut, tt.errOut)
			}
		})
	}
}

// The default document printed by `policy default` passes `policy check`.
func TestPolicyDefaultChecks(t *testing.T) {
	_, def, _ := runPolicyCLI(t, "", "policy", "default")
	code, out, errOut := runPolicyCLI(t, def, "policy", "check", "-")
	if code != 0 || out != "transient: skip immediately\nhard: skip immediately\n\nnormalized document:\n"+def {
		t.Errorf("check of the default: got %d %q %q, want 0 and immediate skip", code, out, errOut)
	}
}

func mustNormalized(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := policy.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return doc.Normalized()
}

// A policy that says only "retry transient failures 3 times" is a whole
// document: check shows the defaults it takes.
func TestPolicyCheckFillsDefaults(t *testing.T) {
	code, out, errOut := runPolicyCLI(t, `{"transient":{"retry":{"max_retries":3,"initial_interval_seconds":5}}}`, "policy", "check", "-")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"transient: retry after up to 5s, 10s, 20s, then skip", "hard: skip immediately", `"version": 1`, `"on_exhausted": "skip"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// The schedule `policy check --help` shows is what check prints for the
// document it names.
func TestPolicyCheckHelpIsTrue(t *testing.T) {
	_, help, _ := runPolicyCLI(t, "", "policy", "check", "--help")
	code, out, errOut := runPolicyCLI(t, policyHelpDoc, "policy", "check", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.SplitN(out, "\n", 3)
	for _, l := range lines[:2] {
		if !strings.Contains(help, "\n  "+l+"\n") {
			t.Errorf("check prints %q, which its --help does not show:\n%s", l, help)
		}
	}
	if !strings.Contains(help, policyHelpDoc) {
		t.Errorf("--help does not name the document its example is of")
	}
}

// The demo says what its policy does: two retries from 1s, the second
// drawn with full jitter up to 2s and floored at the circuits' least
// cooldown (docs/POLICY.md).
func TestDemoPolicyTextIsTrue(t *testing.T) {
	doc, err := policy.Parse([]byte(demoPolicy))
	if err != nil {
		t.Fatal(err)
	}
	if r := doc.Transient.Retry; r.MaxRetries != 2 || r.InitialIntervalSeconds != 1 || doc.Transient.OnExhausted != policy.OutcomeStop {
		t.Fatalf("demo policy %+v changed: update demoPolicyText", doc.Transient)
	}
	for _, want := range []string{"2 retries", "the first after 1s", "the second after 1–2s (full jitter)", "then stop"} {
		if !strings.Contains(demoPolicyText, want) {
			t.Errorf("demoPolicyText %q lacks %q", demoPolicyText, want)
		}
	}
}
