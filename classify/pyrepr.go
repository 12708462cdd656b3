package classify

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Python SDKs and the tools built on them (openai-python, anthropic-python,
// LiteLLM, aider) print a provider's error body with repr(): single quotes,
// True/False/None — "Error code: 429 - {'error': {'type': 'rate_limit_error',
// …}}". decodePyRepr reads such a literal (dict, list, tuple, str, int,
// float, True, False, None) from the start of s into the values
// encoding/json produces (map[string]any, []any, string, json.Number, bool,
// nil), so structured rules see the body whichever way it was printed. It
// returns the value and the bytes consumed; ok is false when s does not
// start with a complete literal. Input is bounded by the caller; nesting
// is bounded here.

const maxPyDepth = 32

func decodePyRepr(s string) (v any, n int, ok bool) {
	p := pyParser{s: s}
	v, ok = p.value(0)
	if !ok {
		return nil, 0, false
	}
	return v, p.i, true
}

type pyParser struct {
	s string
	i int
}

func (p *pyParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *pyParser) value(depth int) (any, bool) {
	if depth > maxPyDepth {
		return nil, false
	}
	p.space()
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.dict(depth)
	case c == '[' || c == '(':
		return p.list(depth)
	case c == '\'' || c == '"':
		return p.str()
	case c == 'b' || c == 'r' || c == 'u':
		if p.i+1 < len(p.s) && (p.s[p.i+1] == '\'' || p.s[p.i+1] == '"') {
			p.i++ // b'…', r'…', u'…': the text is what matters
			return p.str()
		}
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	for _, w := range [...]struct {
		word string
		val  any
	}{{"True", true}, {"False", false}, {"None", nil}} {
		if strings.HasPrefix(p.s[p.i:], w.word) {
			p.i += len(w.word)
			return w.val, true
		}
	}
	return nil, false
}

func (p *pyParser) dict(depth int) (any, bool) {
	p.i++ // {
	m := map[string]any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return m, true
		}
		k, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		ks, isStr := k.(string)
		if !isStr {
			if num, isNum := k.(json.Number); isNum {
				ks = num.String()
			} else {
				return nil, false
			}
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, false
		}
		p.i++
		val, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[ks] = val
		if !p.sep('}') {
			return nil, false
		}
	}
}

func (p *pyParser) list(depth int) (any, bool) {
	closer := byte(']')
	if p.s[p.i] == '(' {
		closer = ')'
	}
	p.i++
	out := []any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == closer {
			p.i++
			return out, true
		}
		val, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		out = append(out, val)
		if !p.sep(closer) {
			return nil, false
		}
	}
}

// sep consumes a ", " before the next element, or leaves the closer for the
// caller; anything else is malformed.
func (p *pyParser) sep(closer byte) bool {
	p.space()
	if p.i >= len(p.s) {
		return false
	}
	switch p.s[p.i] {
	case ',':
		p.i++
		return true
	case closer:
		return true
	}
	return false
}

func (p *pyParser) str() (any, bool) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), true
		case c == '\\' && p.i+1 < len(p.s):
			p.i++
			switch e := p.s[p.i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default: // \' \" \\ and anything else: the character itself
				b.WriteByte(e)
			}
			p.i++
		case c == '\n':
			return nil, false // a Python string literal does not span lines
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return nil, false
}

func (p *pyParser) number() (any, bool) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits := 0
	for p.i < len(p.s) {
		c := p.s[p.i]
		if (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || ((c == '+' || c == '-') && (p.s[p.i-1] == 'e' || p.s[p.i-1] == 'E')) {
			if c >= '0' && c <= '9' {
				digits++
			}
			p.i++
			continue
		}
		break
	}
	if _, err := strconv.ParseFloat(p.s[start:p.i], 64); digits == 0 || err != nil {
		return nil, false
	}
	return json.Number(p.s[start:p.i]), true
}
