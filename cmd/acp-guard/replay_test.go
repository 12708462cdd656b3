package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplayServe(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	crash := write("crash.jsonl", strings.Join([]string{
		`{"t_ms":0,"dir":"meta","argv":["agent"],"adapter":"demo"}`,
		`{"t_ms":1,"dir":"c2a","msg":{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}}`,
		`{"t_ms":2,"dir":"a2c","msg":{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}}`,
		`{"t_ms":3,"dir":"a2c","oops":`, // a bad line is reported and skipped
		`{"t_ms":4,"dir":"stderr","msg":"fatal: out of memory"}`,
		`{"t_ms":5,"dir":"exit","code":-1,"signal":"SIGKILL"}`,
	}, "\n")+"\n")
	clean := write("clean.jsonl", `{"t_ms":0,"dir":"exit","code":0}`+"\n")
	exit3 := write("exit3.jsonl", `{"t_ms":10000,"dir":"exit","code":3}`+"\n")
	empty := write("empty.jsonl", "\n")

	for _, tt := range []struct {
		name        string
		stdin       string
		args        []string
		code        int
		out, errOut string
	}{
		{"serves and exits 128+signal", `{"jsonrpc":"2.0","id":"a","method":"initialize"}` + "\n",
			[]string{"replay", "--serve", "--no-delay", crash}, 137,
			`{"jsonrpc":"2.0","id":"a","result":{"protocolVersion":1}}` + "\n",
			"acp-guard: replay: " + crash + ":4: truncated JSON (line skipped)\nfatal: out of memory\n"},
		{"clean exit", "", []string{"replay", "--serve", clean}, 0, "", ""},
		{"recorded code, sped up", "", []string{"replay", "--serve", "--speed", "1000", exit3}, 3, "", ""},
		{"empty transcript", "", []string{"replay", "--serve", empty}, 1, "", "acp-guard: replay: " + empty + ": no events\n"},
		{"missing file", "", []string{"replay", "--serve", filepath.Join(dir, "none")}, 1, "",
			"acp-guard: replay: open " + filepath.Join(dir, "none") + ": no such file or directory\n"},
		{"two files", "", []string{"replay", "--serve", clean, clean}, 2, "", "acp-guard: --serve takes exactly one transcript, got 2\n"},
		{"json with serve", "", []string{"replay", "--serve", "--json", clean}, 2, "", "acp-guard: --json cannot be used with --serve\n"},
		{"speed without serve", "", []string{"replay", "--speed", "2", clean}, 2, "", "acp-guard: --speed needs --serve\n"},
		{"zero speed", "", []string{"replay", "--serve", "--speed", "0", clean}, 2, "", "acp-guard: --speed must be positive (got 0)\n"},
		{"speed and no-delay", "", []string{"replay", "--serve", "--speed", "2", "--no-delay", clean}, 2, "", ""},
		{"no file", "", []string{"replay"}, 2, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			var in io.Reader = strings.NewReader(tt.stdin)
			if tt.stdin != "" {
				// The client's input stays open after its frames: one that
				// closed it at once would race the recorded exit (the proxy
				// stops an idle agent as soon as its client has gone).
				pr, pw := io.Pipe()
				defer pw.Close()
				go func() { _, _ = io.WriteString(pw, tt.stdin) }()
				in = pr
			}
			code := run(context.Background(), tt.args, in, &out, &errb)
			if code != tt.code {
				t.Errorf("got exit %d, want %d (stderr %q)", code, tt.code, errb.String())
			}
			if out.String() != tt.out {
				t.Errorf("got stdout %q, want %q", out.String(), tt.out)
			}
			if tt.errOut != "" && errb.String() != tt.errOut {
				t.Errorf("got stderr %q, want %q", errb.String(), tt.errOut)
			}
		})
	}
}
