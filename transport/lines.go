package transport

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
)

// Line is one frame as it came off a stream: the exact bytes including the
// line terminator ("\n", "\r\n", or none for a final unterminated line).
// An oversized line carries no Bytes, only how long it was and its first
// and last bytes (bounded), so that its id can still be found.
type Line struct {
	Bytes    []byte
	oversize int64  // > 0: the line exceeded the cap and was discarded
	head     []byte // oversized lines only: the first headKeep bytes
	tail     []byte // oversized lines only: the last tailKeep bytes
	// area is the mapping Bytes lives in, for a long line (readLong); the
	// relay hands it to the garbage collector to keep the line (keep).
	area *lineArea
}

const (
	readBufSize = 256 << 10 // a batch's buffer: one read's worth
	headKeep    = 64 << 10
	tailKeep    = 4 << 10
)

// lineReader splits a stream into lines and hands them over in batches:
// it reads straight into a pooled batch buffer and cuts the lines in place,
// so a burst of small frames costs one read, one hand-over and no copy per
// frame. A line cut by the end of a read is carried into the next batch.
// Lines longer than max are discarded up to their newline without being
// buffered whole.
type lineReader struct {
	r     io.Reader
	max   int64
	carry []byte // the start of a line that the last read cut off
	err   error  // the read error to report once the buffered lines are out
}

func newLineReader(r io.Reader, max int64) *lineReader {
	return &lineReader{r: r, max: max}
}

// batch is a set of lines read together. Its buffer is pooled: the loop
// hands it back (release) once every frame in it has been written, so a
// steady stream of small frames allocates nothing per frame.
type batch struct {
	buf   []byte
	lines []Line
	// big is the mapping a long line was read into (lineArea); release
	// unmaps it.
	big *lineArea
	// refs > 0: the batch has that many owners, and release gives it back
	// only at the last (the fast path: its writer and its observation).
	refs atomic.Int32
}

var batchPool = sync.Pool{New: func() any {
	return &batch{buf: make([]byte, 0, readBufSize), lines: make([]Line, 0, 512)}
}}

// release returns the batch to the pool. Nothing may use its lines after.
func (b *batch) release() {
	if b == nil {
		return
	}
	if b.refs.Load() > 0 && b.refs.Add(-1) > 0 {
		return
	}
	clear(b.lines) // drop references to long lines
	b.lines = b.lines[:0]
	if b.big != nil {
		b.big.free()
		b.big = nil
	}
	b.buf = b.buf[:0]
	batchPool.Put(b)
}

// next returns the next batch of lines: those completed by one read. At
// end of input it returns the lines it has together with the error
// (io.EOF or the read error), the last line possibly unterminated.
func (lr *lineReader) next() (*batch, error) {
	b := batchPool.Get().(*batch)
	buf := append(b.buf[:0], lr.carry...)
	lr.carry = lr.carry[:0]
	start := 0 // where the current, incomplete line begins
	emit := func(end int) {
		line := buf[start:end]
		if int64(len(line)) > lr.max {
			b.lines = append(b.lines, Line{oversize: int64(len(line)), head: keepHead(nil, line), tail: keepTail(nil, line)})
		} else {
			b.lines = append(b.lines, Line{Bytes: line})
		}
		start = end
	}
	scanned := 0 // the carried part may already hold complete lines
	for {
		for {
			i := bytes.IndexByte(buf[scanned:], '\n')
			if i < 0 {
				break
			}
			emit(scanned + i + 1)
			scanned = start
		}
		scanned = len(buf)
		if lr.err != nil {
			if start < len(buf) {
				emit(len(buf)) // a last line without its newline
			}
			b.buf = buf
			return b, lr.err
		}
		if len(b.lines) > 0 {
			break
		}
		if len(buf) == cap(buf) {
			// One line fills the whole buffer: read the rest apart.
			long, rest, err := lr.readLong(buf, b)
			b.lines = append(b.lines, long)
			b.buf = buf[:0]
			lr.carry = append(lr.carry, rest...)
			lr.err = err
			return b, nil
		}
		n, err := lr.r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		lr.err = err
	}
	lr.carry = append(lr.carry, buf[start:]...)
	b.buf = buf[:start]
	return b, nil
}

// readLong reads the rest of a line whose first part (first) filled the
// whole buffer. Up to max bytes are kept, read straight into one lineArea
// (owned by b from then on) without a copy or a growing buffer, so a
// line near the cap costs its own size once; beyond the cap the area is
// given back and the line is drained to its newline keeping only a bounded
// head and tail. rest is what the last read brought after the newline.
func (lr *lineReader) readLong(first []byte, b *batch) (line Line, rest []byte, err error) {
	if int64(len(first)) >= lr.max { // the cap is below one buffer's worth
		return lr.drainLong(int64(len(first)), keepHead(nil, first), keepTail(nil, first))
	}
	area := newLineArea(lr.max)
	if area == nil {
		return lr.readLongHeap(first)
	}
	acc := append(area.buf[:0], first...)
	for {
		if int64(len(acc)) >= lr.max { // no newline within the cap
			head, tail := keepHead(nil, acc), keepTail(nil, acc)
			size := int64(len(acc))
			area.free()
			return lr.drainLong(size, head, tail)
		}
		n, rerr := lr.r.Read(acc[len(acc):min(len(acc)+readBufSize, cap(acc))])
		part := acc[len(acc) : len(acc)+n]
		acc = acc[:len(acc)+n]
		if end := bytes.IndexByte(part, '\n'); end >= 0 {
			lineEnd := len(acc) - n + end + 1
			rest = append([]byte(nil), acc[lineEnd:]...)
			b.big = area
			return Line{Bytes: acc[:lineEnd:lineEnd], area: area}, rest, rerr
		}
		if rerr != nil {
			b.big = area
			return Line{Bytes: acc[:len(acc):len(acc)], area: area}, nil, rerr
		}
	}
}

// drainLong reads the rest of a line known to be over the cap (size bytes
// so far, head and tail kept) to its newline.
func (lr *lineReader) drainLong(size int64, head, tail []byte) (Line, []byte, error) {
	chunk := make([]byte, 64<<10)
	for {
		n, rerr := lr.r.Read(chunk)
		part := chunk[:n]
		var rest []byte
		end := bytes.IndexByte(part, '\n')
		if end >= 0 {
			rest = part[end+1:]
			part = part[:end+1]
		}
		size += int64(len(part))
		head, tail = keepHead(head, part), keepTail(tail, part)
		if end >= 0 || rerr != nil {
			return Line{oversize: size, head: head, tail: tail}, rest, rerr
		}
	}
}

// readLongHeap is readLong on the Go heap, for when no lineArea can be
// mapped: the line grows by appending.
func (lr *lineReader) readLongHeap(first []byte) (line Line, rest []byte, err error) {
	acc := append([]byte(nil), first...)
	chunk := make([]byte, 64<<10)
	for {
		n, rerr := lr.r.Read(chunk)
		part := chunk[:n]
		end := bytes.IndexByte(part, '\n')
		if end >= 0 {
			rest = part[end+1:]
			part = part[:end+1]
		}
		if int64(len(acc)+len(part)) > lr.max {
			size := int64(len(acc) + len(part))
			head := keepHead(keepHead(nil, acc), part)
			tail := keepTail(keepTail(nil, acc), part)
			acc = nil
			if end >= 0 || rerr != nil {
				return Line{oversize: size, head: head, tail: tail}, rest, rerr
			}
			return lr.drainLong(size, head, tail)
		}
		acc = append(acc, part...)
		if end >= 0 || rerr != nil {
			return Line{Bytes: acc}, rest, rerr
		}
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
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}
