package replay

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReaderLineErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		line string
		want string
	}{
		{"truncated", `{"t_ms":1,"dir":"c2a","msg":{"id":1`, "truncated JSON"},
		{"not JSON", `panic: boom`, "not a JSON object"},
		{"JSON but not an object", `[1,2]`, "not a JSON object"},
		{"malformed", `{"t_ms":1,,"dir":"c2a"}`, "malformed JSON"},
		{"unknown dir", `{"t_ms":1,"dir":"sideways","msg":{}}`, `unknown "dir" "sideways"`},
		{"missing dir", `{"t_ms":1,"msg":{}}`, `missing "dir"`},
		{"missing t_ms", `{"dir":"a2c","msg":{}}`, `missing "t_ms"`},
		{"missing msg", `{"t_ms":1,"dir":"a2c"}`, `missing "msg" or "raw"`},
		{"stderr msg not a string", `{"t_ms":1,"dir":"stderr","msg":{"x":1}}`, "must be a string"},
		{"exit without code", `{"t_ms":1,"dir":"exit"}`, `missing "code"`},
		{"t_ms not an integer", `{"t_ms":1.5,"dir":"a2c","msg":{}}`, `field "t_ms"`},
		{"t_ms a string", `{"t_ms":"1","dir":"a2c","msg":{}}`, `field "t_ms"`},
		{"negative t_ms", `{"t_ms":-4,"dir":"a2c","msg":{}}`, "negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := `{"t_ms":0,"dir":"c2a","msg":{"a":1}}` + "\n" + tt.line + "\n" + `{"t_ms":2,"dir":"a2c","msg":{"b":2}}` + "\n"
			r := NewReader(strings.NewReader(in))
			first, err := r.Next()
			if err != nil || first.Line != 1 {
				t.Fatalf("first Next() = line %d, %v; want line 1, nil", first.Line, err)
			}
			_, err = r.Next()
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("second Next() error = %v, want a *LineError", err)
			}
			if le.Line != 2 {
				t.Errorf("got line %d, want 2", le.Line)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "line 2: ") {
				t.Errorf("got error %q, want %q naming line 2", err, tt.want)
			}
			third, err := r.Next()
			if err != nil || third.Line != 3 || string(third.Msg) != `{"b":2}` {
				t.Fatalf("third Next() = line %d %s, %v; want line 3 {\"b\":2}, nil", third.Line, third.Msg, err)
			}
			if _, err := r.Next(); err != io.EOF {
				t.Errorf("fourth Next() error = %v, want io.EOF", err)
			}
		})
	}
}

func TestReaderLines(t *testing.T) {
	in := "\n" + // blank lines are skipped but counted
		`{"t_ms":1,"dir":"c2a","msg":{"x" : [1, 2]},"future":"ignored"}` + "\r\n" + // a CRLF transcript
		"   \n" +
		`{"t_ms":2,"dir":"stderr","msg":"warn: \u00e9"}` + "\n" +
		`{"t_ms":3,"dir":"a2c","raw":"garbage"}` // no final newline
	events, errs := ReadAll(strings.NewReader(in))
	if len(errs) != 0 {
		t.Fatalf("got errors %v, want none", errs)
	}
	if len(events) != 3 {
		t.Fatalf("got %d events, want 3", len(events))
	}
	for i, want := range []struct {
		line  int
		bytes string
	}{{2, `{"x" : [1, 2]}`}, {4, `"warn: \u00e9"`}, {5, "garbage"}} {
		if events[i].Line != want.line {
			t.Errorf("event %d: got line %d, want %d", i, events[i].Line, want.line)
		}
		if got := string(events[i].Bytes()); got != want.bytes {
			t.Errorf("event %d: got bytes %q, want %q", i, got, want.bytes)
		}
	}
	if got := events[1].Text(); got != "warn: é" {
		t.Errorf("got stderr text %q, want %q", got, "warn: é")
	}
}

func TestReaderLineTooLong(t *testing.T) {
	long := `{"t_ms":1,"dir":"a2c","raw":"` + strings.Repeat("x", 200) + `"}`
	in := long + "\n" + `{"t_ms":2,"dir":"a2c","msg":{}}` + "\n" + long
	r := NewReader(strings.NewReader(in))
	r.max = 100
	for i, wantLine := range []int{1, 2, 3} {
		ev, err := r.Next()
		if i == 1 {
			if err != nil || ev.Line != wantLine {
				t.Fatalf("Next() = line %d, %v; want line %d", ev.Line, err, wantLine)
			}
			continue
		}
		var le *LineError
		if !errors.As(err, &le) || le.Line != wantLine || !errors.Is(err, ErrLineTooLong) {
			t.Fatalf("Next() error = %v, want ErrLineTooLong on line %d", err, wantLine)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("got %v, want io.EOF", err)
	}
}

// failingReader returns data and then a read error.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestReadAllStopsOnReadError(t *testing.T) {
	boom := errors.New("disk gone")
	events, errs := ReadAll(&failingReader{data: []byte(`{"t_ms":1,"dir":"a2c","msg":{}}` + "\n" + `{"t_ms":2,"di`), err: boom})
	if len(events) != 1 {
		t.Errorf("got %d events, want 1", len(events))
	}
	if len(errs) != 1 || !errors.Is(errs[0], boom) {
		t.Fatalf("got errors %v, want the read error", errs)
	}
	var le *LineError
	if errors.As(errs[0], &le) {
		t.Errorf("a read error must not be a LineError: %v", errs[0])
	}
	if !strings.Contains(errs[0].Error(), "after line 1") {
		t.Errorf("got %q, want it to say where reading stopped", errs[0])
	}
}

// TestSampleTranscriptsAreCanonical reads each sample and checks that
// writing the events back gives the same bytes: the marshaller's field order
// is the documented one and msg survives verbatim.
func TestSampleTranscriptsAreCanonical(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no sample transcripts")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		events, errs := ReadAll(bytes.NewReader(data))
		if len(errs) != 0 {
			t.Fatalf("%s: %v", f, errs)
		}
		var buf bytes.Buffer
		for _, ev := range events {
			b, err := ev.MarshalJSON()
			if err != nil {
				t.Fatalf("%s:%d: %v", f, ev.Line, err)
			}
			buf.Write(b)
			buf.WriteByte('\n')
		}
		if buf.String() != string(data) {
			t.Errorf("%s: re-encoding changed the transcript:\n%s", f, buf.String())
		}
	}
}
