package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/catalogue"
)

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestClassifyCommand(t *testing.T) {
	const now = "--now=2026-11-29T12:00:00Z"
	for _, tt := range []struct {
		name  string
		stdin string
		args  []string
		want  map[string]any
	}{
		{"plain text argument", "", []string{"classify", now, `API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
			map[string]any{"code": "provider_overloaded", "class": "transient", "rule": "anthropic.overloaded_error.v1", "retryAfterMs": nil, "resetAt": nil}},
		{"evidence on stdin with timing", `{"source":"http","httpStatus":429,"headers":{"Retry-After":"20"}}`, []string{"classify", now},
			map[string]any{"code": "rate_limited", "rule": "http.status_429.v2", "retryAfterMs": 20000.0}},
		{"reset time", "", []string{"classify", now, "--adapter", "claude-agent-acp", "5-hour limit reached ∙ resets 3pm"},
			map[string]any{"code": "quota_limited", "resetAt": "2026-11-29T15:00:00Z"}},
		{"adapter flag scopes rules", "", []string{"classify", now, "--adapter", "cursor-agent", "Error: RetriableError: [unavailable] PING timed out"},
			map[string]any{"code": "agent_transport_lost", "safeExcerpt": "[unavailable] PING timed out"}},
		{"no adapter, no cursor rule", "", []string{"classify", now, "Error: RetriableError: [unavailable] PING timed out"},
			map[string]any{"code": "unclassified", "reason": "no_match"}},
		{"prose", "the session died on rate limit, so I moved the card\n", []string{"classify", now},
			map[string]any{"code": "unclassified", "class": "unclassified", "confidence": "low", "rule": ""}},
		{"a JSON body that is not an envelope is text", `{"error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}`, []string{"classify", now},
			map[string]any{"code": "quota_limited"}},
		{"stale", `{"source":"rpc_error","message":"exceeded retry limit, last status: 429","stale":true}`, []string{"classify", now},
			map[string]any{"code": "unclassified", "reason": "stale"}},
	} {
		code, out, errOut := runCLI(t, tt.stdin, tt.args...)
		if code != 0 {
			t.Errorf("%s: exit %d, stderr %q", tt.name, code, errOut)
			continue
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Errorf("%s: output %q: %v", tt.name, out, err)
			continue
		}
		for k, want := range tt.want {
			if v, ok := got[k]; !ok || v != want {
				t.Errorf("%s: got %s=%v, want %v (output %s)", tt.name, k, got[k], want, out)
			}
		}
		for _, k := range []string{"retryAfterMs", "resetAt", "catalogueVersion", "safeExcerpt"} {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: output lacks %q: %s", tt.name, k, out)
			}
		}
	}
}

func TestClassifyCommandErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"bad now", "", []string{"classify", "--now", "yesterday", "x"}, int(exitUsage), "--now"},
		{"empty input", "  \n", []string{"classify"}, int(exitFailure), "no evidence"},
		{"bad source", `{"source":"pager"}`, []string{"classify"}, int(exitFailure), `source "pager"`},
		{"missing catalogue", "", []string{"classify", "--catalogue", "/nonexistent/cat.json", "x"}, int(exitFailure), "--catalogue"},
	} {
		code, _, errOut := runCLI(t, tt.stdin, tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.want) {
			t.Errorf("%s: got exit %d stderr %q, want exit %d and %q", tt.name, code, errOut, tt.code, tt.want)
		}
	}
}

func TestCatalogueCommand(t *testing.T) {
	code, out, _ := runCLI(t, "", "catalogue", "list")
	if code != 0 || !strings.Contains(out, "cursor.retriable_stream_reset.v1") || !strings.Contains(out, catalogue.Default().Version()) {
		t.Errorf("list: exit %d, output %q", code, out)
	}
	code, out, _ = runCLI(t, "", "catalogue", "show", "cursor.retriable_stream_reset.v1")
	if code != 0 || !strings.Contains(out, `"class": "transient"`) || !strings.Contains(out, `"fixtures"`) {
		t.Errorf("show: exit %d, output %q", code, out)
	}
	code, _, errOut := runCLI(t, "", "catalogue", "show", "no.such.v1")
	if code != int(exitFailure) || !strings.Contains(errOut, "unknown rule") {
		t.Errorf("show unknown: exit %d, stderr %q", code, errOut)
	}
	code, out, _ = runCLI(t, "", "catalogue", "test")
	if code != 0 || !strings.Contains(out, " 0 failed") || strings.Contains(out, "FAIL") {
		t.Errorf("test: exit %d, output tail %q", code, tail(out))
	}
	code, out, _ = runCLI(t, "", "catalogue", "lint")
	if code != 0 || !strings.Contains(out, "no findings") {
		t.Errorf("lint: exit %d, output %q", code, out)
	}

	// An exported catalogue round-trips through --catalogue; a broken one
	// fails test and lint with exit 1.
	code, exported, _ := runCLI(t, "", "catalogue", "export")
	if code != 0 {
		t.Fatalf("export: exit %d", code)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(exported), 0o600)
	if code, out, _ := runCLI(t, "", "catalogue", "test", "--catalogue", good); code != 0 {
		t.Errorf("test exported: exit %d, %q", code, tail(out))
	}
	if code, out, errOut := runCLI(t, "", "classify", "--catalogue", good, "Prompt is too long"); code != 0 || !strings.Contains(out, "context_overflow") {
		t.Errorf("classify with exported: exit %d, %q %q", code, out, errOut)
	}
	broken := strings.Replace(exported, `"name": "phrase.network.v1 +1",
   "rule": "phrase.network.v1"`, `"name": "phrase.network.v1 +1",
   "rule": "phrase.timeout.v1"`, 1)
	if broken == exported {
		t.Fatal("could not break the exported catalogue")
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(broken), 0o600)
	code, out, _ = runCLI(t, "", "catalogue", "test", "--catalogue", bad)
	if code != int(exitFailure) || !strings.Contains(out, "FAIL phrase.timeout.v1") {
		t.Errorf("test broken: exit %d, output %q", code, tail(out))
	}
	code, _, errOut = runCLI(t, "", "classify", "--catalogue", bad, "x")
	if code != int(exitFailure) || !strings.Contains(errOut, "phrase.network.v1 +1") {
		t.Errorf("classify with broken catalogue: exit %d, stderr %q", code, errOut)
	}
	noFix := strings.Replace(exported, `"fixtures"`, `"unused"`, 1)
	os.WriteFile(bad, []byte(noFix), 0o600)
	if code, _, _ := runCLI(t, "", "catalogue", "lint", "--catalogue", bad); code != int(exitFailure) {
		t.Errorf("lint unknown field: exit %d, want %d", code, exitFailure)
	}
}

func tail(s string) string {
	if len(s) > 400 {
		return s[len(s)-400:]
	}
	return s
}
