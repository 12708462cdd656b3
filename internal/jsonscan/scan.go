// Package jsonscan finds what the relay needs in a JSON-RPC frame without
// decoding it: the spans of top-level members, nested lookups by key path,
// and bounded string prefixes. It allocates nothing on its hot paths and
// checks structure as it goes, so a line it accepts is well-formed JSON
// (strings are checked for termination, not for escape validity).
package jsonscan

import (
	"bytes"
	"errors"
	"strconv"
	"unicode/utf8"
)

// ErrSyntax reports a frame that is not a well-formed JSON value.
var ErrSyntax = errors.New("jsonscan: malformed JSON")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the closing quote of the string
// whose opening quote is at b[i].
func skipString(b []byte, i int) (int, error) {
	i++ // opening quote
	// Short strings (keys, ids, kinds) are found faster by a plain loop
	// than by a call to IndexByte.
	for k := i; k < len(b) && k < i+24; k++ {
		switch b[k] {
		case '"':
			return k + 1, nil
		case '\\':
			goto long
		}
	}
long:
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, ErrSyntax
		}
		end := i + j
		// Count the backslashes immediately before the quote.
		n := 0
		for k := end - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return end + 1, nil
		}
		i = end + 1
	}
}

// Skip returns the index just past the JSON value starting at or after b[i]
// (leading whitespace is skipped).
func Skip(b []byte, i int) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return 0, ErrSyntax
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{' || c == '[':
		return skipComposite(b, i)
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		j := i + 1
		for j < len(b) {
			c := b[j]
			if (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
				j++
				continue
			}
			break
		}
		return j, nil
	}
	return 0, ErrSyntax
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, ErrSyntax
	}
	return i + len(lit), nil
}

// skipComposite skips an object or array with an explicit depth counter:
// structure is checked (keys are strings, separators are where they belong)
// without recursion, so deeply nested input cannot exhaust the stack.
func skipComposite(b []byte, i int) (int, error) {
	// stack of open brackets, kept small: depth beyond 1<<16 is refused.
	var stackBuf [64]byte
	stack := stackBuf[:0]
	const (
		wantValue = iota // a value (or a closing ']' right after '[')
		wantKey          // a key (or '}' right after '{')
		wantSep          // ',' or the closing bracket
	)
	state, first := wantValue, false
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return 0, ErrSyntax
		}
		c := b[i]
		switch state {
		case wantKey:
			if c == '}' && first {
				stack = stack[:len(stack)-1]
				i++
				if len(stack) == 0 {
					return i, nil
				}
				state = wantSep
				continue
			}
			var err error
			if i, err = skipKey(b, i); err != nil {
				return 0, err
			}
			state, first = wantValue, false
		case wantValue:
			switch {
			case c == '{' || c == '[':
				if len(stack) >= 1<<16 {
					return 0, ErrSyntax
				}
				stack = append(stack, c)
				i++
				first, state = true, wantValue
				if c == '{' {
					state = wantKey
				}
				continue
			case c == ']' && first && len(stack) > 0 && stack[len(stack)-1] == '[':
				stack = stack[:len(stack)-1]
				i++
				if len(stack) == 0 {
					return i, nil
				}
				state = wantSep
				continue
			}
			var err error
			if i, err = Skip(b, i); err != nil {
				return 0, err
			}
			state, first = wantSep, false
		case wantSep:
			top := stack[len(stack)-1]
			switch {
			case c == ',':
				i++
				state, first = wantValue, false
				if top == '{' {
					state = wantKey
				}
			case (c == '}' && top == '{') || (c == ']' && top == '['):
				stack = stack[:len(stack)-1]
				i++
				if len(stack) == 0 {
					return i, nil
				}
			default:
				return 0, ErrSyntax
			}
		}
	}
}

// skipKey skips an object's key at b[i] and the ':' after it.
func skipKey(b []byte, i int) (int, error) {
	if b[i] != '"' {
		return 0, ErrSyntax
	}
	j, err := skipString(b, i)
	if err != nil {
		return 0, err
	}
	i = skipSpace(b, j)
	if i >= len(b) || b[i] != ':' {
		return 0, ErrSyntax
	}
	return i + 1, nil
}

// Members calls fn for each top-level member of the object in b, in order,
// with the raw key (between the quotes, escapes not processed) and the raw
// value span. It stops early when fn returns false. It returns ErrSyntax if
// b (up to where it stopped) is not a well-formed object followed by
// whitespace only.
func Members(b []byte, fn func(key, val []byte) bool) error {
	Note(b)
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return ErrSyntax
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		if skipSpace(b, i+1) != len(b) {
			return ErrSyntax
		}
		return nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return ErrSyntax
		}
		kend, err := skipString(b, i)
		if err != nil {
			return err
		}
		key := b[i+1 : kend-1]
		i = skipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return ErrSyntax
		}
		vstart := skipSpace(b, i+1)
		vend, err := Skip(b, vstart)
		if err != nil {
			return err
		}
		if !fn(key, b[vstart:vend]) {
			return nil
		}
		i = skipSpace(b, vend)
		if i >= len(b) {
			return ErrSyntax
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			if skipSpace(b, i+1) != len(b) {
				return ErrSyntax
			}
			return nil
		default:
			return ErrSyntax
		}
	}
}

// Get returns the raw value at the key path inside the object b, or nil.
// Keys are compared with the raw (unescaped) key bytes.
func Get(b []byte, path ...string) []byte {
	cur := b
	for _, k := range path {
		var found []byte
		err := Members(cur, func(key, val []byte) bool {
			if string(key) == k {
				found = val
				return false
			}
			return true
		})
		if err != nil || found == nil {
			return nil
		}
		cur = found
	}
	return cur
}

// IsString reports whether the raw value is a JSON string.
func IsString(raw []byte) bool { return len(raw) >= 2 && raw[0] == '"' }

// String decodes a raw JSON string value. ok is false for non-strings.
func String(raw []byte) (s string, ok bool) {
	if !IsString(raw) {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), true
	}
	return unescape(inner), true
}

// StringPrefix decodes at most max bytes of a raw JSON string value and
// reports whether the whole string fit. Only the prefix is decoded, so a
// huge chunk costs no more than a small one.
func StringPrefix(raw []byte, max int) (s string, complete bool, ok bool) {
	if !IsString(raw) {
		return "", false, false
	}
	inner := raw[1 : len(raw)-1]
	// An escape is at most 12 input bytes (a surrogate pair) for at most 4
	// output bytes, and a plain byte is one for one, so this window always
	// yields max output bytes when the string is that long.
	window := inner
	if len(window) > 3*max+12 {
		window = window[:3*max+12]
	}
	var out string
	if bytes.IndexByte(window, '\\') < 0 {
		out = string(window[:min(len(window), max+utf8.UTFMax)])
	} else {
		out = unescape(window)
	}
	if len(out) <= max && len(window) == len(inner) {
		return out, true, true
	}
	if len(out) > max {
		out = cutRunes(out, max)
	}
	return out, false, true
}

// unescape decodes JSON string escapes leniently: a broken escape is kept
// literally.
func unescape(in []byte) string {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' || i+1 >= len(in) {
			out = append(out, c)
			continue
		}
		i++
		switch in[i] {
		case '"', '\\', '/':
			out = append(out, in[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if i+4 >= len(in) {
				out = append(out, '\\', 'u')
				continue
			}
			r, err := strconv.ParseUint(string(in[i+1:i+5]), 16, 32)
			if err != nil {
				out = append(out, '\\', 'u')
				continue
			}
			i += 4
			rr := rune(r)
			if rr >= 0xD800 && rr < 0xDC00 && i+6 < len(in) && in[i+1] == '\\' && in[i+2] == 'u' {
				if r2, err := strconv.ParseUint(string(in[i+3:i+7]), 16, 32); err == nil && r2 >= 0xDC00 && r2 < 0xE000 {
					rr = 0x10000 + (rr-0xD800)<<10 + (rune(r2) - 0xDC00)
					i += 6
				}
			}
			out = utf8.AppendRune(out, rr)
		default:
			out = append(out, '\\', in[i])
		}
	}
	return string(out)
}

// cutRunes cuts s to at most n bytes without splitting a UTF-8 sequence.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for k := 0; k < utf8.UTFMax && cut > 0 && !utf8.RuneStart(s[cut]); k++ {
		cut--
	}
	return s[:cut]
}

// Seek returns b from the start of the value of the top-level member key
// of the object at the start of b, to the end of b: the value is located
// but not skipped, so descending into a large nested object costs nothing
// beyond the members before it. It returns nil when the key is absent or
// the object is malformed before it. Use Value to cut the value itself.
func Seek(b []byte, key string) []byte {
	c := NewCursor(b)
	for k, ok := c.Next(); ok; k, ok = c.Next() {
		if string(k) == key {
			return c.Rest()
		}
	}
	return nil
}

// Value cuts the JSON value at the start of b (as returned by Seek).
func Value(b []byte) []byte {
	if b == nil {
		return nil
	}
	end, err := Skip(b, 0)
	if err != nil {
		return nil
	}
	return b[:end]
}

// Cursor walks the members of one object in order without skipping the
// value of a member it descends into: Next positions it at a member's
// value, and the caller either reads the value (Value), descends into it
// (Rest), or moves on (Next skips it).
type Cursor struct {
	b       []byte
	i       int  // position: after '{' or ',' (before the next key), or at a value
	atValue bool // Next returned and the value was not consumed
	done    bool
}

// NewCursor starts a walk of the object at the start of b.
func NewCursor(b []byte) Cursor {
	Note(b)
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return Cursor{done: true}
	}
	return Cursor{b: b, i: i + 1}
}

// Next moves to the next member and returns its raw key; ok is false at
// the end of the object or on malformed input.
func (c *Cursor) Next() (key []byte, ok bool) {
	if c.done {
		return nil, false
	}
	if c.atValue {
		end, err := Skip(c.b, c.i)
		if err != nil {
			c.done = true
			return nil, false
		}
		c.i = skipSpace(c.b, end)
		if c.i >= len(c.b) || c.b[c.i] != ',' {
			c.done = true
			return nil, false
		}
		c.i++
		c.atValue = false
	}
	i := skipSpace(c.b, c.i)
	if i >= len(c.b) || c.b[i] != '"' {
		c.done = true
		return nil, false
	}
	kend, err := skipString(c.b, i)
	if err != nil {
		c.done = true
		return nil, false
	}
	key = c.b[i+1 : kend-1]
	i = skipSpace(c.b, kend)
	if i >= len(c.b) || c.b[i] != ':' {
		c.done = true
		return nil, false
	}
	c.i = skipSpace(c.b, i+1)
	c.atValue = true
	return key, true
}

// Rest returns the input from the current value to the end, for
// descending into it; the walk cannot continue after a Rest whose value is
// then not skipped (call Next to skip it).
func (c *Cursor) Rest() []byte {
	if !c.atValue {
		return nil
	}
	return c.b[c.i:]
}

// Value returns the current member's raw value and consumes it.
func (c *Cursor) Value() []byte {
	if !c.atValue {
		return nil
	}
	end, err := Skip(c.b, c.i)
	if err != nil {
		c.done = true
		return nil
	}
	v := c.b[c.i:end]
	c.i = skipSpace(c.b, end)
	c.atValue = false
	if c.i < len(c.b) && c.b[c.i] == ',' {
		c.i++
	} else {
		c.done = true
	}
	return v
}
