package replay_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	acpguard "github.com/acp-guard/acp-guard"
	"github.com/acp-guard/acp-guard/replay"
)

var update = flag.Bool("update", false, "rewrite the expected outputs of testdata/transcripts")

// transcriptsDir holds the golden transcripts: for each x.jsonl,
//
//	x.expected.jsonl  what `acp-guard replay --json` prints (one turn a line)
//	x.errors.txt      the bad lines and divergences, "line N: …" (only when any)
//	x.policy.json     optional: the policy to replay with (--policy)
//	x.adapter         optional: the adapter flag to replay with (--adapter)
//
// The expectations are written by `go test ./replay -run TestGolden -update`
// and never edited by hand.
const transcriptsDir = "../testdata/transcripts"

// goldenTranscripts lists the transcripts under transcriptsDir.
func goldenTranscripts(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(transcriptsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".jsonl") && !strings.HasSuffix(path, ".expected.jsonl") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no transcripts under %s", transcriptsDir)
	}
	return files
}

// playGolden plays one transcript with its beside-files' options and
// returns the --json lines and the error lines.
func playGolden(t *testing.T, path string) (turns, errs []byte) {
	t.Helper()
	base := strings.TrimSuffix(path, ".jsonl")
	var cfg acpguard.Config
	if data, err := os.ReadFile(base + ".policy.json"); err == nil {
		p, err := acpguard.ParsePolicy(data)
		if err != nil {
			t.Fatalf("%s.policy.json: %v", base, err)
		}
		cfg.Policy = p
	}
	if data, err := os.ReadFile(base + ".adapter"); err == nil {
		cfg.Adapter = strings.TrimSpace(string(data))
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, readErrs := replay.ReadAll(f)
	res, err := acpguard.Replay(events, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var tb, eb bytes.Buffer
	for _, turn := range res.Turns {
		b, err := json.Marshal(turn)
		if err != nil {
			t.Fatal(err)
		}
		tb.Write(b)
		tb.WriteByte('\n')
	}
	for _, e := range replay.ErrorsByLine(readErrs, res.Errors) {
		eb.WriteString(e.Error())
		eb.WriteByte('\n')
	}
	return tb.Bytes(), eb.Bytes()
}

// TestGolden replays every transcript and compares with its expectations.
func TestGolden(t *testing.T) {
	for _, path := range goldenTranscripts(t) {
		name, _ := filepath.Rel(transcriptsDir, path)
		t.Run(name, func(t *testing.T) {
			turns, errs := playGolden(t, path)
			base := strings.TrimSuffix(path, ".jsonl")
			checkGolden(t, base+".expected.jsonl", turns, true)
			checkGolden(t, base+".errors.txt", errs, false)
		})
	}
}

// checkGolden compares got with the file's content, or rewrites it with
// -update. A file that may be absent (keep false) is removed when got is
// empty.
func checkGolden(t *testing.T, path string, got []byte, keep bool) {
	t.Helper()
	if *update {
		if len(got) == 0 && !keep {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			return
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if os.IsNotExist(err) && !keep {
		want, err = nil, nil
	}
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (review, then regenerate with -update):\n%s", path, lineDiff(string(want), string(got)))
	}
}

// lineDiff shows the lines that differ, want first.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl + "\n")
		}
	}
	return b.String()
}
