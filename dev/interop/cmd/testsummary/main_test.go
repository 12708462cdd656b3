package main

import (
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	const pkg = `"Package":"p"`
	for _, tt := range []struct {
		name   string
		in     []string
		ok     bool
		want   []string
		absent []string
	}{
		{
			name: "all pass",
			in: []string{
				`{"Action":"start",` + pkg + `}`,
				`{"Action":"run",` + pkg + `,"Test":"TestInterop"}`,
				`{"Action":"run",` + pkg + `,"Test":"TestInterop/codex"}`,
				`{"Action":"run",` + pkg + `,"Test":"TestInterop/codex/success"}`,
				`{"Action":"output",` + pkg + `,"Test":"TestInterop/codex/success","Output":"    x_test.go:1: KNOWN AGENT BUG a/b still happens\n"}`,
				`{"Action":"output",` + pkg + `,"Test":"TestInterop/codex/success","Output":"    x_test.go:2: detail\n"}`,
				`{"Action":"pass",` + pkg + `,"Test":"TestInterop/codex/success","Elapsed":2.5}`,
				`{"Action":"pass",` + pkg + `,"Test":"TestInterop/codex","Elapsed":2.5}`,
				`{"Action":"pass",` + pkg + `,"Test":"TestInterop","Elapsed":2.5}`,
				`{"Action":"pass",` + pkg + `,"Elapsed":3}`,
			},
			ok:     true,
			want:   []string{"PASS TestInterop/codex/success (2.5 s)", "TestInterop/codex/success: x_test.go:1: KNOWN AGENT BUG a/b", "1 passed, 0 failed"},
			absent: []string{"detail", "PASS TestInterop/codex ", "PASS TestInterop ("},
		},
		{
			name: "a scenario fails",
			in: []string{
				`{"Action":"start",` + pkg + `}`,
				`{"Action":"output",` + pkg + `,"Test":"TestInterop/codex/fallback","Output":"=== RUN   TestInterop/codex/fallback\n"}`,
				`{"Action":"output",` + pkg + `,"Test":"TestInterop/codex/fallback","Output":"    x_test.go:9: got 2 notices, want 1\n"}`,
				`{"Action":"fail",` + pkg + `,"Test":"TestInterop/codex/fallback","Elapsed":5}`,
				`{"Action":"fail",` + pkg + `,"Test":"TestInterop/codex","Elapsed":5}`,
				`{"Action":"fail",` + pkg + `,"Test":"TestInterop","Elapsed":5}`,
				`{"Action":"fail",` + pkg + `,"Elapsed":6}`,
			},
			want:   []string{"FAIL TestInterop/codex/fallback (5.0 s):", "x_test.go:9: got 2 notices, want 1", "0 passed, 1 failed", "FAILED TestInterop/codex/fallback"},
			absent: []string{"=== RUN", "FAILED TestInterop/codex\n"},
		},
		{
			name: "go test dies: a panic, no test failed",
			in: []string{
				`{"Action":"start",` + pkg + `}`,
				`{"Action":"output",` + pkg + `,"Output":"panic: test timed out after 10m0s\n"}`,
				`{"Action":"fail",` + pkg + `,"Elapsed":600}`,
			},
			want: []string{"panic: test timed out", "package p: fail"},
		},
		{
			name: "the input ends before the package's result",
			in: []string{
				`{"Action":"start",` + pkg + `}`,
				`{"Action":"pass",` + pkg + `,"Test":"TestA","Elapsed":1}`,
			},
			want: []string{"package p: no result"},
		},
		{
			name: "a build failure is text",
			in:   []string{`# github.com/x/p`, `p/x.go:1:1: syntax error`, `FAIL	github.com/x/p [build failed]`},
			want: []string{"p/x.go:1:1: syntax error", "0 passed"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			ok := summarize(strings.NewReader(strings.Join(tt.in, "\n")+"\n"), &out, time.Now())
			if ok != tt.ok {
				t.Errorf("ok: got %v, want %v\n%s", ok, tt.ok, out.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(out.String(), a) {
					t.Errorf("output has %q:\n%s", a, out.String())
				}
			}
		})
	}
}
