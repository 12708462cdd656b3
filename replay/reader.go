package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxLineBytes is the longest transcript line the Reader accepts.
const MaxLineBytes = 256 << 20

// ErrLineTooLong is wrapped by the LineError for a line over the limit.
var ErrLineTooLong = errors.New("line too long")

// LineError is a transcript line that could not be read as an event.
type LineError struct {
	Line int // 1-based
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Reader reads transcript events one line at a time. A bad line yields a
// *LineError and the next call continues with the following line.
type Reader struct {
	br   *bufio.Reader
	max  int
	line int
	buf  []byte
	err  error // sticky: io.EOF or a read error
}

// NewReader returns a Reader for the transcript in r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: MaxLineBytes}
}

// Next returns the next event. Blank lines are skipped. It returns a
// *LineError for a malformed line (and continues with the next line on the
// following call), io.EOF at the end, and any other read error once reading
// failed (for good).
func (r *Reader) Next() (Event, error) {
	for r.err == nil {
		line, tooLong, err := r.readLine()
		if err != nil {
			if err != io.EOF {
				r.err = fmt.Errorf("replay: reading transcript after line %d: %w", r.line, err)
				return Event{}, r.err
			}
			r.err = io.EOF
			if len(line) == 0 && !tooLong {
				break
			}
		}
		r.line++
		if tooLong {
			return Event{}, &LineError{Line: r.line, Err: fmt.Errorf("%w (limit %d bytes)", ErrLineTooLong, r.max)}
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		ev, perr := parseLine(line)
		if len(r.buf) > 1<<20 {
			r.buf = nil // do not keep one huge line's buffer alive
		}
		if perr != nil {
			return Event{}, &LineError{Line: r.line, Err: perr}
		}
		ev.Line = r.line
		return ev, nil
	}
	return Event{}, r.err
}

// readLine returns the next line without its "\n". The result aliases r.buf.
// A line over the limit is consumed and reported as tooLong.
func (r *Reader) readLine() (line []byte, tooLong bool, err error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if !tooLong {
			if len(r.buf)+len(chunk) > r.max+1 { // +1: the "\n" itself
				tooLong = true
				r.buf = r.buf[:0]
			} else {
				r.buf = append(r.buf, chunk...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case tooLong:
			return nil, true, err
		case err != nil:
			return r.buf, false, err
		}
		return r.buf[:len(r.buf)-1], false, nil
	}
}

// parseLine decodes one non-blank line with a message fit for a person.
func parseLine(line []byte) (Event, error) {
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] != '{' {
		return Event{}, errors.New("not a JSON object")
	}
	var ev Event
	err := ev.UnmarshalJSON(trimmed)
	var (
		se  *json.SyntaxError
		ute *json.UnmarshalTypeError
	)
	switch {
	case err == nil:
	case errors.As(err, &se) && se.Offset >= int64(len(trimmed)):
		return Event{}, errors.New("truncated JSON")
	case errors.As(err, &se):
		return Event{}, fmt.Errorf("malformed JSON at byte %d: %v", se.Offset, err)
	case errors.As(err, &ute) && ute.Field != "":
		return Event{}, fmt.Errorf("field %q: cannot use a JSON %s", ute.Field, ute.Value)
	default:
		return Event{}, err
	}
	return ev, nil
}

// ReadAll reads every event from r. It returns the events it could read and,
// in order, the errors for the lines it could not (each a *LineError) and a
// read error if reading stopped early.
func ReadAll(r io.Reader) ([]Event, []error) {
	var (
		events []Event
		errs   []error
	)
	rd := NewReader(r)
	for {
		ev, err := rd.Next()
		var le *LineError
		switch {
		case err == nil:
			events = append(events, ev)
		case errors.As(err, &le):
			errs = append(errs, err)
		case err == io.EOF:
			return events, errs
		default:
			return events, append(errs, err)
		}
	}
}
