package guard

import (
	"encoding/json"
	"sort"
)

// The edits below change spans of a frame and keep every other byte as
// the agent wrote it: a rewritten or annotated frame differs from the
// original only where it must. The spans come from the frame's parsed
// form (reply.go), so no edit parses the frame again; several edits of
// one frame (an annotation and the client's id) are applied in one pass.

// offset returns where sub (a subslice of base) starts within base.
func offset(base, sub []byte) int { return cap(base) - cap(sub) }

// edit replaces line[at:end] with repl.
type edit struct {
	at, end int
	repl    [][]byte
}

// applyEdits returns line with the non-overlapping edits applied.
func applyEdits(line []byte, eds ...edit) []byte {
	if len(eds) == 0 {
		return line
	}
	sort.Slice(eds, func(i, j int) bool { return eds[i].at < eds[j].at })
	n := len(line)
	for _, e := range eds {
		n -= e.end - e.at
		for _, r := range e.repl {
			n += len(r)
		}
	}
	out := make([]byte, 0, n)
	prev := 0
	for _, e := range eds {
		out = append(out, line[prev:e.at]...)
		for _, r := range e.repl {
			out = append(out, r...)
		}
		prev = e.end
	}
	return append(out, line[prev:]...)
}

// idEdit replaces the id span idSpan (a subslice of line) with id.
func idEdit(line, idSpan, id []byte) edit {
	i := offset(line, idSpan)
	return edit{at: i, end: i + len(idSpan), repl: [][]byte{id}}
}

// memberEdit inserts "key":val as the first member of the object span
// obj (a subslice of line); empty says whether obj has no members.
func memberEdit(line, obj []byte, empty bool, key string, val []byte) edit {
	i := offset(line, obj) + 1 // just past '{'
	kv := append(append(append([]byte{'"'}, key...), '"', ':'), val...)
	if empty {
		return edit{at: i, end: i, repl: [][]byte{kv}}
	}
	return edit{at: i, end: i, repl: [][]byte{kv, {','}}}
}

// withMember inserts "key":val as the first member of the object span obj
// (a subslice of line).
func withMember(line, obj []byte, key string, val []byte) []byte {
	return applyEdits(line, memberEdit(line, obj, emptyObject(obj), key, val))
}

// emptyObject reports whether the object span obj has no members.
func emptyObject(obj []byte) bool {
	for _, c := range obj[1 : len(obj)-1] {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// annotateEdit adds providerError to the error object e of line: an
// existing data object gains the key; any other data value is kept under
// agentData; no data gets {"providerError":…}. ok is false when pe does
// not encode.
func annotateEdit(line []byte, e *rpcErrorObject, pe any) (edit, bool) {
	peJSON, err := json.Marshal(pe)
	if err != nil {
		return edit{}, false
	}
	data := e.Data
	switch {
	case data == nil:
		// Insert "data" as the last member of the error object.
		end := offset(line, e.span) + len(e.span) - 1 // the closing '}'
		sep := []byte(",")
		if e.empty {
			sep = nil
		}
		return edit{at: end, end: end, repl: [][]byte{sep, []byte(`"data":{"providerError":`), peJSON, []byte("}")}}, true
	case data[0] == '{':
		return memberEdit(line, data, emptyObject(data), "providerError", peJSON), true
	default:
		i := offset(line, data)
		return edit{at: i, end: i + len(data), repl: [][]byte{[]byte(`{"agentData":`), data, []byte(`,"providerError":`), peJSON, []byte("}")}}, true
	}
}

// resultMetaEdit adds meta under result._meta.acpGuard of a result
// parsed as r. ok is false when the result is not an object or meta does
// not encode.
func resultMetaEdit(line []byte, r *reply, meta any) (edit, bool) {
	if len(r.result) == 0 || r.result[0] != '{' {
		return edit{}, false
	}
	mj, err := json.Marshal(meta)
	if err != nil {
		return edit{}, false
	}
	if m := r.meta; len(m) > 0 && m[0] == '{' {
		return memberEdit(line, m, emptyObject(m), "acpGuard", mj), true
	}
	return memberEdit(line, r.result, emptyObject(r.result), "_meta", append(append([]byte(`{"acpGuard":`), mj...), '}')), true
}
