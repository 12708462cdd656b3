package acptest

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"sync"
	"testing"
)

// Conn is the client's side of an ACP session: the peer's stdin, written
// whole frames at a time, and its stdout, read line by line on the
// caller's goroutine (nothing reads ahead: a test that stops reading
// applies backpressure). Proc and Piped are Conns to a process and to an
// in-process server.
type Conn struct {
	t      testing.TB    // nil: no test (Spawn)
	Out    *bufio.Reader // stdout; read it directly to set the pace byte by byte
	answer Answerer
	record bool
	skip   bool // Options.SkipInvalid
	lines  [][]byte
	diag   func() string // what failure messages add (the peer's stderr)

	inMu sync.Mutex
	in   io.WriteCloser // nil once closed
}

func newConn(t testing.TB, in io.WriteCloser, out io.Reader, o Options) *Conn {
	return &Conn{t: t, Out: bufio.NewReaderSize(out, 1<<20), answer: o.Answer, record: o.Record, skip: o.SkipInvalid, in: in, diag: func() string { return "" }}
}

// Write writes s to stdin.
func (p *Conn) Write(s string) error {
	p.inMu.Lock()
	in := p.in
	p.inMu.Unlock()
	if in == nil {
		return os.ErrClosed
	}
	_, err := io.WriteString(in, s)
	return err
}

// Send writes frames to stdin; a failed write fails the test.
func (p *Conn) Send(frames ...string) {
	p.t.Helper()
	for _, f := range frames {
		if err := p.Write(f); err != nil {
			p.t.Fatalf("writing stdin: %v%s", err, p.diag())
		}
	}
}

// TrySend writes frames to stdin and ignores a failed write: the process
// may have exited already, and what it answered is what the test checks.
func (p *Conn) TrySend(frames ...string) {
	for _, f := range frames {
		_ = p.Write(f)
	}
}

// WriteAsync writes b to stdin from another goroutine, then closes stdin
// when closeAfter is set; the channel yields the write's error. The
// goroutine ends when the write does.
func (p *Conn) WriteAsync(b []byte, closeAfter bool) <-chan error {
	p.inMu.Lock()
	in := p.in
	if closeAfter {
		p.in = nil
	}
	p.inMu.Unlock()
	errc := make(chan error, 1)
	go func() {
		_, err := in.Write(b)
		if closeAfter {
			in.Close()
		}
		errc <- err
	}()
	return errc
}

// Writer is stdin as an io.Writer (Write, for a test that streams a
// frame in pieces).
func (p *Conn) Writer() io.Writer { return connWriter{p} }

type connWriter struct{ p *Conn }

func (w connWriter) Write(b []byte) (int, error) {
	if err := w.p.Write(string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// CloseStdin closes the client's end of stdin: EOF for the process.
func (p *Conn) CloseStdin() {
	p.inMu.Lock()
	defer p.inMu.Unlock()
	if p.in != nil {
		p.in.Close()
		p.in = nil
	}
}

// ReadLine returns the next stdout line, terminator included; at the end
// of stdout it returns what was left with the error.
func (p *Conn) ReadLine() ([]byte, error) {
	b, err := p.Out.ReadBytes('\n')
	if p.record && len(b) > 0 {
		p.lines = append(p.lines, b)
	}
	return b, err
}

// Lines returns every stdout line read so far (Options.Record).
func (p *Conn) Lines() [][]byte { return p.lines }

// Line returns the next stdout line, terminator included; the end of
// stdout fails the test.
func (p *Conn) Line() []byte {
	p.t.Helper()
	b, err := p.ReadLine()
	if err != nil {
		p.t.Fatalf("reading stdout: %v (got %q so far)%s", err, Trunc(b, 200), p.diag())
	}
	return b
}

// TryNext returns the next stdout frame; ok is false at the end of stdout.
// A line that is not JSON (unless Options.SkipInvalid), or stdout ending
// inside a line, fails the test.
func (p *Conn) TryNext() (Frame, bool) {
	p.t.Helper()
	for {
		b, err := p.ReadLine()
		if err != nil {
			if len(b) > 0 && !p.skip {
				p.t.Fatalf("stdout ended inside a frame: %q", Trunc(b, 200))
			}
			return Frame{}, false
		}
		if f, ok := p.frame(b); ok {
			return f, true
		}
	}
}

// Next returns the next stdout frame; the end of stdout fails the test.
func (p *Conn) Next() Frame {
	p.t.Helper()
	f, ok := p.TryNext()
	if !ok {
		p.t.Fatalf("stdout ended%s", p.diag())
	}
	return f
}

// frame decodes a line read and answers it if it is a request; ok is false
// for a line skipped as not JSON.
func (p *Conn) frame(b []byte) (Frame, bool) {
	p.t.Helper()
	f, err := Parse(b)
	if err != nil {
		if p.skip {
			return Frame{}, false
		}
		p.t.Fatalf("stdout line is not JSON: %v: %q", err, Trunc(b, 200))
	}
	if p.answer != nil && f.IsRequest() {
		if reply, ok := p.answer(f); ok {
			_ = p.Write(reply) // an agent that is gone gets no answer
		}
	}
	return f, true
}

// Until returns the frames up to and including the response to id (its
// JSON text: "3", `"a"`).
func (p *Conn) Until(id string) []Frame {
	p.t.Helper()
	var got []Frame
	for {
		f, ok := p.TryNext()
		if !ok {
			p.t.Fatalf("stdout ended before the response to %s%s", id, p.diag())
		}
		got = append(got, f)
		if f.Answers(id) {
			return got
		}
	}
}

// UntilMatch returns the frames up to and including the first that match
// accepts.
func (p *Conn) UntilMatch(match func(Frame) bool) []Frame {
	p.t.Helper()
	var got []Frame
	for {
		f, ok := p.TryNext()
		if !ok {
			p.t.Fatalf("stdout ended before the awaited frame%s", p.diag())
		}
		got = append(got, f)
		if match(f) {
			return got
		}
	}
}

// RestBytes reads stdout to its end.
func (p *Conn) RestBytes() []byte {
	p.t.Helper()
	b, err := io.ReadAll(p.Out)
	if err != nil {
		p.t.Fatalf("reading stdout: %v", err)
	}
	if p.record {
		for _, ln := range bytes.SplitAfter(b, []byte("\n")) {
			if len(ln) > 0 {
				p.lines = append(p.lines, ln)
			}
		}
	}
	return b
}

// Rest reads stdout to its end and decodes every line.
func (p *Conn) Rest() []Frame {
	p.t.Helper()
	var out []Frame
	for {
		f, ok := p.TryNext()
		if !ok {
			return out
		}
		out = append(out, f)
	}
}

// Open initializes the agent (request 1) and opens a session (request 2):
// the frames the client saw, and the session id.
func (p *Conn) Open() ([]Frame, string) {
	p.t.Helper()
	p.Send(Initialize(1), SessionNew(2))
	frames := p.Until("1")
	frames = append(frames, p.Until("2")...)
	sid, err := SessionID(frames[len(frames)-1])
	if err != nil {
		p.t.Fatal(err)
	}
	return frames, sid
}

// Trunc cuts b to at most n bytes, for messages.
func Trunc(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
