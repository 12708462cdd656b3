package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// chunkReader hands out its chunks one Read at a time, then err (io.EOF
// if nil).
type chunkReader struct {
	chunks []string
	err    error
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if c.chunks[0] == "" {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// batches reads lr to the end and returns each batch's lines as strings
// (oversized lines as "<oversize N>") and the final error.
func batches(lr *lineReader) ([][]string, error) {
	var out [][]string
	for {
		b, err := lr.next()
		lines := b.lines
		if len(lines) > 0 {
			var b []string
			for _, l := range lines {
				if l.oversize > 0 {
					b = append(b, fmt.Sprintf("<oversize %d>", l.oversize))
				} else {
					b = append(b, string(l.Bytes))
				}
			}
			out = append(out, b)
		}
		if err != nil {
			return out, err
		}
	}
}

func TestLineReaderBatches(t *testing.T) {
	for _, tt := range []struct {
		name   string
		chunks []string
		want   [][]string
	}{
		{
			name:   "all buffered lines in one batch",
			chunks: []string{"a\nb\r\n\n\r\nc\n"},
			want:   [][]string{{"a\n", "b\r\n", "\n", "\r\n", "c\n"}},
		},
		{
			name:   "one batch per read",
			chunks: []string{"x\ny\n", "z\n"},
			want:   [][]string{{"x\n", "y\n"}, {"z\n"}},
		},
		{
			name:   "a line split across reads",
			chunks: []string{"x\n{\"a\":", "1}\r\n"},
			want:   [][]string{{"x\n"}, {"{\"a\":1}\r\n"}},
		},
		{
			name:   "final line without terminator",
			chunks: []string{"a\nlast"},
			want:   [][]string{{"a\n"}, {"last"}}, // the end of input comes with the next read
		},
		{
			name:   "final lone CR",
			chunks: []string{"a\n\r"},
			want:   [][]string{{"a\n"}, {"\r"}},
		},
		{
			name:   "nothing",
			chunks: nil,
			want:   nil,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := batches(newLineReader(&chunkReader{chunks: tt.chunks}, 1<<20))
			if !errors.Is(err, io.EOF) {
				t.Errorf("got error %v, want io.EOF", err)
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
				t.Errorf("got batches %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLineReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	got, err := batches(newLineReader(&chunkReader{chunks: []string{"a\npart"}, err: boom}, 1<<20))
	if !errors.Is(err, boom) {
		t.Errorf("got error %v, want %v", err, boom)
	}
	if want := [][]string{{"a\n"}, {"part"}}; fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestLineReaderBatchTarget: a long run of buffered small lines is cut
// into batches of about batchTarget bytes, and nothing is lost.
func TestLineReaderBatchSize(t *testing.T) {
	var in bytes.Buffer
	for i := range 100000 {
		fmt.Fprintf(&in, "line %07d\n", i) // 13 bytes
	}
	lr := newLineReader(bytes.NewReader(in.Bytes()), 64<<20)
	var all bytes.Buffer
	nBatches := 0
	for {
		b, err := lr.next()
		lines := b.lines
		size := 0
		for _, l := range lines {
			size += len(l.Bytes)
			all.Write(l.Bytes)
		}
		if len(lines) > 0 {
			nBatches++
			if size > readBufSize {
				t.Errorf("batch of %d bytes, want at most %d", size, readBufSize)
			}
		}
		if err != nil {
			break
		}
	}
	if !bytes.Equal(all.Bytes(), in.Bytes()) {
		t.Errorf("lines do not add up to the input")
	}
	if least := in.Len() / readBufSize; nBatches < least || nBatches > in.Len()/512 {
		t.Errorf("%d batches for %d bytes", nBatches, in.Len())
	}
}

// TestLineReaderLongLines: lines longer than the read buffer but within the
// cap come out whole and in order with their neighbours.
func TestLineReaderLongLines(t *testing.T) {
	long := `{"s":"` + strings.Repeat("é", 300<<10) + `"}` + "\r\n"
	in := "a\n" + long + "b\n" + long
	got, err := batches(newLineReader(&chunkReader{chunks: []string{in}}, 4<<20))
	if !errors.Is(err, io.EOF) {
		t.Errorf("got error %v", err)
	}
	var flat []string
	for _, b := range got {
		flat = append(flat, b...)
	}
	if want := []string{"a\n", long, "b\n", long}; strings.Join(flat, "|") != strings.Join(want, "|") {
		t.Errorf("got %d lines (%d bytes), want 4 lines (%d bytes)", len(flat), len(strings.Join(flat, "")), len(in))
	}
}

// TestLineReaderCap: the cap counts the line's bytes with its terminator;
// a longer line is discarded up to its newline and the next line follows.
// It holds for caps below the read buffer's size too.
func TestLineReaderCap(t *testing.T) {
	for _, max := range []int64{1024, 1 << 20} {
		for _, tt := range []struct {
			size int // bytes before "\n"
			over bool
		}{
			{int(max) - 1, false},
			{int(max), true},
			{int(max) + 1, true},
			{3 * int(max), true},
		} {
			t.Run(fmt.Sprintf("max %d, line %d+1", max, tt.size), func(t *testing.T) {
				in := "a\n" + strings.Repeat("x", tt.size) + "\nnext\n"
				got, err := batches(newLineReader(&chunkReader{chunks: []string{in}}, max))
				if !errors.Is(err, io.EOF) {
					t.Errorf("got error %v", err)
				}
				var flat []string
				for _, b := range got {
					flat = append(flat, b...)
				}
				want := []string{"a\n", strings.Repeat("x", tt.size) + "\n", "next\n"}
				if tt.over {
					want[1] = fmt.Sprintf("<oversize %d>", tt.size+1)
				}
				if strings.Join(flat, "|") != strings.Join(want, "|") {
					t.Errorf("got %.80q…, want %.80q…", flat, want)
				}
			})
		}
	}
}

// TestLineReaderOversizeHeadTail: a discarded line keeps a bounded head
// and tail, from which its id is recovered.
func TestLineReaderOversizeHeadTail(t *testing.T) {
	const max = 1 << 20
	blob := strings.Repeat("z", 3*max)
	for _, tt := range []struct {
		name   string
		line   string
		wantID string // "" none
	}{
		{"id first", `{"jsonrpc":"2.0","id":42,"result":{"s":"` + blob + `"}}` + "\n", "42"},
		{"string id first", `{"id":"a\"b","jsonrpc":"2.0","result":"` + blob + `"}` + "\n", `"a\"b"`},
		{"id last", `{"jsonrpc":"2.0","result":{"s":"` + blob + `"},"id":7}` + "\r\n", "7"},
		{"string id last", `{"jsonrpc":"2.0","result":"` + blob + `","id" : "x-1" }` + "\n", `"x-1"`},
		{"notification", `{"jsonrpc":"2.0","method":"session/update","params":{"s":"` + blob + `"}}` + "\n", ""},
		{"nested id only", `{"jsonrpc":"2.0","method":"m","params":{"s":"` + blob + `","id":5},"x":1}` + "\n", ""},
		{"not JSON", blob + "\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lr := newLineReader(&chunkReader{chunks: []string{tt.line, "after\n"}}, max)
			b, err := lr.next()
			lines := b.lines
			if err != nil || len(lines) != 1 {
				t.Fatalf("got %d lines, err %v; want 1 line", len(lines), err)
			}
			l := lines[0]
			if l.oversize != int64(len(tt.line)) || l.Bytes != nil {
				t.Errorf("got Oversize %d with %d bytes, want %d with none", l.oversize, len(l.Bytes), len(tt.line))
			}
			if len(l.head) != headKeep || string(l.head) != tt.line[:headKeep] {
				t.Errorf("head is not the first %d bytes", headKeep)
			}
			if len(l.tail) != tailKeep || string(l.tail) != tt.line[len(tt.line)-tailKeep:] {
				t.Errorf("tail is not the last %d bytes", tailKeep)
			}
			if got := string(oversizeID(l)); got != tt.wantID {
				t.Errorf("oversizeID = %q, want %q", got, tt.wantID)
			}
			rest, err := batches(lr)
			if !errors.Is(err, io.EOF) || fmt.Sprint(rest) != "[[after\n]]" {
				t.Errorf("after the long line got %q, %v", rest, err)
			}
		})
	}
}

func TestKeepTail(t *testing.T) {
	var tail []byte
	var all []byte
	for i := range 3000 {
		chunk := []byte(fmt.Sprintf("<%d>", i))
		all = append(all, chunk...)
		tail = keepTail(tail, chunk)
	}
	if want := all[len(all)-tailKeep:]; !bytes.Equal(tail, want) {
		t.Errorf("tail %q…, want %q…", tail[:20], want[:20])
	}
}

func TestBatchFramesLeaveInOneWrite(t *testing.T) {
	lr := newLineReader(strings.NewReader("{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":3}\n"), DefaultMaxLine)
	b, _ := lr.next()
	if len(b.lines) != 4 {
		t.Fatalf("got %d lines, want 4", len(b.lines))
	}
	var chunks [][]byte
	for _, ln := range b.lines {
		chunks = appendChunk(chunks, ln.Bytes)
	}
	if len(chunks) != 1 || string(chunks[0]) != "{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":3}\n" {
		t.Errorf("pass-through frames of one batch became %d chunks: %q", len(chunks), chunks)
	}
}

// TestLineAreaKept: a kept area outlives its batch (free leaves it
// mapped) and is unmapped once nothing references it.
func TestLineAreaKept(t *testing.T) {
	const n = 4 << 20
	a := newLineArea(n)
	if a == nil {
		t.Skip("cannot map a line area")
	}
	line := a.buf[:n]
	for i := range line {
		line[i] = byte('a' + i%26)
	}
	addr := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&line[0])))
	a.keep()
	a.free() // the batch's release: a kept area stays
	if line[0] != 'a' || line[n-1] != byte('a'+(n-1)%26) {
		t.Fatal("a kept area lost its line when its batch was released")
	}
	if !mapped(t, addr) {
		t.Fatal("the kept area is not mapped")
	}
	a, line = nil, nil
	// The collector finds the area unreferenced and runs its cleanup on
	// its own goroutine; each round gives it the chance.
	for i := 0; i < 1000 && mapped(t, addr); i++ {
		runtime.GC()
		runtime.Gosched()
	}
	if mapped(t, addr) {
		t.Error("the kept area is still mapped with nothing referencing it")
	}
}

// mapped reports whether a mapping of this process starts at addr
// ("7f…-", as /proc/self/maps writes it).
func mapped(t *testing.T, addr string) bool {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, addr) {
			return true
		}
	}
	return false
}
