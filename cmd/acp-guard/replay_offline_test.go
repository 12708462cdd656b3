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
			cursor + ": session s1, prompt 3 (generation 1): rewritten, error -32603 \"Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)\", 1 control chunk(s) suppressed\n  agent_transport_lost (transient, high confidence) rule cursor.retriable_stream_reset.v1, replaySafe true\n"},
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
