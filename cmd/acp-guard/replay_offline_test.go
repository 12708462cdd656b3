package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplayOffline(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "transcripts")
	cursor := filepath.Join(root, "handmade", "cursor_control_chunk.jsonl")
	bad := filepath.Join(root, "bad", "bad_lines.jsonl")
	diverged := filepath.Join(root, "bad", "diverged_retry.jsonl")
	want, err := os.ReadFile(filepath.Join(root, "handmade", "cursor_control_chunk.expected.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name             string
		args             []string
		code             int
		out, errContains string
		outContains      string
	}{
		{"json is the golden", []string{"replay", "--json", cursor}, 0, string(want), "", ""},
		{"human summary", []string{"replay", cursor}, 0, "", "",
			"turn 1 (request id 3, session s1, generation 1): rewritten, error -32603 \"Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)\", 1 control chunk(s) suppressed\n  agent_transport_lost (transient, high confidence) rule cursor.retriable_stream_reset.v1, replaySafe true\n"},
		{"adapter flag changes the verdict", []string{"replay", "--json", "--adapter", "codex-acp", cursor}, 0, "", "", `"outcome":"passed"`},
		{"bad lines name FILE:LINE and exit 1", []string{"replay", "--json", bad}, 1, "", bad + ":7: truncated JSON\n", `"outcome":"passed"`},
		{"divergence is a note", []string{"replay", "--json", diverged}, 0, "", diverged + ":9: note: the agent answers", `"outcome":"annotated"`},
		{"missing file, others still played", []string{"replay", "--json", filepath.Join(root, "none.jsonl"), cursor}, 1, string(want), "no such file", ""},
		{"bad policy", []string{"replay", "--policy", cursor, cursor}, 2, "", "--policy", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tt.args, strings.NewReader(""), &out, &errb)
			if code != tt.code {
				t.Errorf("got exit %d, want %d (stderr %q)", code, tt.code, errb.String())
			}
			if tt.out != "" && out.String() != tt.out {
				t.Errorf("got stdout %q, want %q", out.String(), tt.out)
			}
			if !strings.Contains(out.String(), tt.outContains) {
				t.Errorf("got stdout %q, want it to contain %q", out.String(), tt.outContains)
			}
			if !strings.Contains(errb.String(), tt.errContains) {
				t.Errorf("got stderr %q, want it to contain %q", errb.String(), tt.errContains)
			}
		})
	}
}

// A replay that decides otherwise than the recording says how to
// reproduce the recorded decision, and the command it gives does.
func TestReplayDivergenceSaysHowToReproduce(t *testing.T) {
	retried := filepath.Join("..", "..", "testdata", "transcripts", "recorded", "retried.jsonl")
	policyFile := strings.TrimSuffix(retried, ".jsonl") + ".policy.json"
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"replay", retried}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	const lead = "to reproduce the recorded decision: "
	i := strings.Index(errb.String(), lead)
	if i < 0 {
		t.Fatalf("stderr %q; want %q", errb.String(), lead)
	}
	cmdline, _, _ := strings.Cut(errb.String()[i+len(lead):], "\n")
	if want := "acp-guard replay --policy " + policyFile + " " + retried; cmdline != want {
		t.Fatalf("got %q, want %q", cmdline, want)
	}
	if !strings.Contains(errb.String(), "does not record the policy") || !strings.Contains(out.String(), "the recording decided differently") {
		t.Errorf("stdout %q, stderr %q; want the cause named and the summary to say so", out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	args := strings.Fields(strings.TrimPrefix(cmdline, "acp-guard "))
	if code := run(context.Background(), args, strings.NewReader(""), &out, &errb); code != 0 || errb.Len() != 0 {
		t.Fatalf("%v: exit %d, stderr %q; want no note", args, code, errb.String())
	}
	if !strings.Contains(out.String(), "retried, stopReason end_turn, 3 attempts") {
		t.Errorf("got %q, want the recorded retries", out.String())
	}
}

func TestTranscriptsInSkipsExpectations(t *testing.T) {
	got, err := transcriptsIn(filepath.Join("..", "..", "testdata", "transcripts", "real", "kilo"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, filepath.Base(p))
	}
	if want := "offline_dns.jsonl server_error_500.jsonl unauthorized_401.jsonl"; strings.Join(names, " ") != want {
		t.Errorf("got %v, want %s", names, want)
	}
}
