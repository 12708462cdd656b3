package transport

import (
	"bufio"
	"bytes"
	"errors"
	"io"
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

// next returns the next batch of lines. The returned slices share one
// backing array that the caller owns. At end of input it returns the lines
// it has together with the error (io.EOF or the read error).
func (lr *lineReader) next() ([]Line, error) {
	var (
		buf   []byte
		ends  []int
		lines []Line
	)
	flush := func() {
		start := 0
		for _, e := range ends {
			lines = append(lines, Line{Bytes: buf[start:e:e]})
			start = e
		}
		ends = ends[:0]
	}
	for {
		chunk, err := lr.r.ReadSlice('\n')
		switch {
		case err == nil:
			buf = append(buf, chunk...)
			ends = append(ends, len(buf))
		case errors.Is(err, bufio.ErrBufferFull):
			// A line longer than the read buffer: collect it separately.
			flush()
			long, lerr := lr.readLong(chunk)
			lines = append(lines, long)
			if lerr != nil {
				return lines, lerr
			}
			return lines, nil
		default: // io.EOF or a read error; chunk may hold a final partial line
			if len(chunk) > 0 {
				buf = append(buf, chunk...)
				ends = append(ends, len(buf))
			}
			flush()
			return lines, err
		}
		if lr.r.Buffered() == 0 || len(buf) >= batchTarget {
			flush()
			return lines, nil
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
