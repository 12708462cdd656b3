package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedTranscripts adds every sample transcript, and the project's recorded
// ones when present, to the fuzz corpus.
func seedTranscripts(f *testing.F) {
	for _, root := range []string{"testdata", filepath.Join("..", "testdata", "transcripts")} {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
				return nil
			}
			if data, err := os.ReadFile(path); err == nil && len(data) < 1<<20 {
				f.Add(data)
			}
			return nil
		})
	}
	f.Add([]byte(`{"t_ms":1,"dir":"exit","code":0}`))
	f.Add([]byte("{\"t_ms\":1,\"dir\":\"c2a\",\"msg\":{\"id\":1\n\n\r\n{\"dir\":\"meta\"}"))
}

func FuzzReader(f *testing.F) {
	seedTranscripts(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Count(data, []byte{'\n'}) + 1
		r := NewReader(bytes.NewReader(data))
		last := 0
		for calls := 0; ; calls++ {
			if calls > lines+1 {
				t.Fatalf("Next called %d times on %d lines without io.EOF", calls, lines)
			}
			ev, err := r.Next()
			if err == io.EOF {
				return
			}
			var le *LineError
			switch {
			case errors.As(err, &le):
				if le.Line <= last || le.Line > lines {
					t.Fatalf("LineError on line %d after line %d of %d", le.Line, last, lines)
				}
				last = le.Line
				continue
			case err != nil:
				t.Fatalf("Next: %v", err)
			}
			if ev.Line <= last || ev.Line > lines {
				t.Fatalf("event on line %d after line %d of %d", ev.Line, last, lines)
			}
			last = ev.Line
			// Whatever the Reader accepts writes back as one line that
			// reads back the same.
			b, err := ev.MarshalJSON()
			if err != nil {
				t.Fatalf("line %d: MarshalJSON: %v", ev.Line, err)
			}
			if bytes.IndexByte(b, '\n') >= 0 {
				t.Fatalf("line %d: encoding spans lines: %q", ev.Line, b)
			}
			again, err := parseLine(b)
			if err != nil {
				t.Fatalf("line %d: re-reading %q: %v", ev.Line, b, err)
			}
			b2, _ := again.MarshalJSON()
			if !bytes.Equal(b, b2) {
				t.Fatalf("line %d: not stable:\n%s\n%s", ev.Line, b, b2)
			}
			if !bytes.Equal(again.Bytes(), ev.Bytes()) {
				t.Fatalf("line %d: frame bytes changed: %q → %q", ev.Line, ev.Bytes(), again.Bytes())
			}
		}
	})
}

// FuzzParseFrame checks the frame scanner against encoding/json on valid
// JSON and that splicing an id keeps the frame valid.
func FuzzParseFrame(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}`,
		`{"id":"a\"b","result":{"id":2}}`, `{"\u006dethod":"x"}`, `[]`, `{"id":1,"id":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		if bytes.Contains(b, []byte(`\u`)) {
			return // the relay's scanner compares keys as written (no escaped keys)
		}
		fi := parseFrame(b)
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil || fi.kind == kindOther {
			return
		}
		if id, ok := m["id"]; ok != (fi.id != nil) || ok && idKey(id) != idKey(compact(fi.id)) {
			t.Fatalf("parseFrame(%s): id %s, encoding/json %s", b, fi.id, id)
		}
		out := withID(b, fi, []byte(`"new"`))
		if !json.Valid(out) {
			t.Fatalf("withID(%s) = %s: invalid JSON", b, out)
		}
	})
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}
