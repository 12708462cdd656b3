package transport

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// Line is one frame as it came off a stream: the exact bytes including the
// line terminator ("\n", "\r\n", or none for a final unterminated line).
// An oversized line carries no bytes; Size says how long it was and Head
// holds its first bytes (bounded) so its id can still be found.
type Line struct {
	Bytes    []byte
	Oversize int64  // > 0: the line exceeded the cap and was discarded
	Head     []byte // oversized lines only: the first headKeep bytes
	Tail     []byte // oversized lines only: the last tailKeep bytes
}

const (
	readBufSize = 256 << 10
	batchTarget = 256 << 10 // flush a batch when it holds this many bytes
	headKeep    = 64 << 10
	tailKeep    = 4 << 10
)

// lineReader splits a stream into lines and hands them over in batches: all
// complete lines already buffered go out together, so a burst of small
// frames costs one channel send, not one per frame. Lines longer than max
// are discarded up to their newline without being buffered whole.
type lineReader struct {
	r   *bufio.Reader
	max int64
}

func newLineReader(r io.Reader, max int64) *lineReader {
	// A buffer no larger than the cap, so that every line over the cap
	// overflows it and goes through readLong, which enforces the cap.
	return &lineReader{r: bufio.NewReaderSize(r, int(min(readBufSize, max))), max: max}
}

// batch is a set of lines read together. Its buffer is pooled: the loop
// hands it back (release) once every frame in it has been written, so a
// steady stream of small frames allocates nothing per frame.
type batch struct {
	buf   []byte
	lines []Line
}

var batchPool = sync.Pool{New: func() any {
	// batchTarget plus one full read buffer: appending a chunk to a buffer
	// holding less than batchTarget never reallocates, so the lines'
	// slices stay valid.
	return &batch{buf: make([]byte, 0, batchTarget+readBufSize), lines: make([]Line, 0, 512)}
}}

// release returns the batch to the pool. Nothing may use its lines after.
func (b *batch) release() {
	if b == nil {
		return
	}
	clear(b.lines) // drop references to long lines
	b.lines = b.lines[:0]
	b.buf = b.buf[:0]
	batchPool.Put(b)
}

// next returns the next batch of lines. At end of input it returns the
// lines it has together with the error (io.EOF or the read error).
func (lr *lineReader) next() (*batch, error) {
	b := batchPool.Get().(*batch)
	add := func(chunk []byte) {
		start := len(b.buf)
		b.buf = append(b.buf, chunk...)
		b.lines = append(b.lines, Line{Bytes: b.buf[start:len(b.buf)]})
	}
	for {
		chunk, err := lr.r.ReadSlice('\n')
		switch {
		case err == nil:
			add(chunk)
		case errors.Is(err, bufio.ErrBufferFull):
			// A line longer than the read buffer: collect it separately.
			long, lerr := lr.readLong(chunk)
			b.lines = append(b.lines, long)
			return b, lerr
		default: // io.EOF or a read error; chunk may hold a final partial line
			if len(chunk) > 0 {
				add(chunk)
			}
			return b, err
		}
		if lr.r.Buffered() == 0 || len(b.buf) >= batchTarget {
			return b, nil
		}
	}
}

// readLong reads the rest of a line whose first part (first) filled the
// buffer. Up to max bytes are kept; beyond that the line is drained to its
// newline keeping only a bounded head and tail.
func (lr *lineReader) readLong(first []byte) (Line, error) {
	acc := append([]byte(nil), first...)
	var size int64 = int64(len(first))
	oversize := size > lr.max
	var head, tail []byte
	if oversize {
		head, tail = keepHead(nil, acc), keepTail(nil, acc)
		acc = nil
	}
	for {
		chunk, err := lr.r.ReadSlice('\n')
		size += int64(len(chunk))
		if !oversize && size > lr.max {
			oversize = true
			head = keepHead(nil, acc)
			tail = keepTail(nil, acc)
			acc = nil
		}
		if oversize {
			head = keepHead(head, chunk)
			tail = keepTail(tail, chunk)
		} else {
			acc = append(acc, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if oversize {
			return Line{Oversize: size, Head: head, Tail: tail}, err
		}
		return Line{Bytes: acc}, err
	}
}

func keepHead(head, b []byte) []byte {
	if room := headKeep - len(head); room > 0 {
		head = append(head, b[:min(room, len(b))]...)
	}
	return head
}

func keepTail(tail, b []byte) []byte {
	if len(b) >= tailKeep {
		return append(tail[:0], b[len(b)-tailKeep:]...)
	}
	tail = append(tail, b...)
	if len(tail) > tailKeep {
		tail = append(tail[:0], tail[len(tail)-tailKeep:]...)
	}
	return tail
}

// trimEOL returns the line without its terminator.
func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}
