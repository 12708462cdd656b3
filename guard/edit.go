package guard

import (
	"encoding/json"

	"github.com/acp-guard/acp-guard/internal/jsonscan"
)

// The edits below change one span of a frame and keep every other byte as
// the agent wrote it: a rewritten or annotated frame differs from the
// original only where it must.

// offset returns where sub (a subslice of base) starts within base.
func offset(base, sub []byte) int { return cap(base) - cap(sub) }

// splice returns base with base[i:j] replaced by repl.
func splice(base []byte, i, j int, repl ...[]byte) []byte {
	n := len(base) - (j - i)
	for _, r := range repl {
		n += len(r)
	}
	out := make([]byte, 0, n)
	out = append(out, base[:i]...)
	for _, r := range repl {
		out = append(out, r...)
	}
	return append(out, base[j:]...)
}

// replaceID returns line with the id span idSpan (a subslice of line)
// replaced by id.
func replaceID(line, idSpan, id []byte) []byte {
	i := offset(line, idSpan)
	return splice(line, i, i+len(idSpan), id)
}

// withMember inserts "key":val as the first member of the object span obj
// (a subslice of line).
func withMember(line, obj []byte, key string, val []byte) []byte {
	i := offset(line, obj) + 1 // just past '{'
	kv := append(append(append([]byte{'"'}, key...), '"', ':'), val...)
	empty := true
	_ = jsonscan.Members(obj, func(_, _ []byte) bool { empty = false; return false })
	if empty {
		return splice(line, i, i, kv)
	}
	return splice(line, i, i, kv, []byte{','})
}

// annotateError adds providerError to the error object errSpan of line: an
// existing data object gains the key; any other data value is kept under
// agentData; no data gets {"providerError":…}.
func annotateError(line, errSpan []byte, pe any) []byte {
	peJSON, err := json.Marshal(pe)
	if err != nil {
		return line
	}
	data := jsonscan.Get(errSpan, "data")
	switch {
	case data == nil:
		// Insert "data" as the last member of the error object.
		end := offset(line, errSpan) + len(errSpan) - 1 // the closing '}'
		sep := []byte(",")
		empty := true
		_ = jsonscan.Members(errSpan, func(_, _ []byte) bool { empty = false; return false })
		if empty {
			sep = nil
		}
		return splice(line, end, end, sep, []byte(`"data":{"providerError":`), peJSON, []byte("}"))
	case len(data) > 0 && data[0] == '{':
		return withMember(line, data, "providerError", peJSON)
	default:
		i := offset(line, data)
		return splice(line, i, i+len(data), []byte(`{"agentData":`), data, []byte(`,"providerError":`), peJSON, []byte("}"))
	}
}

// withResultMeta adds meta under result._meta.acpGuard (result must be an
// object; otherwise the line is returned unchanged).
func withResultMeta(line, result []byte, meta any) []byte {
	if len(result) == 0 || result[0] != '{' {
		return line
	}
	mj, err := json.Marshal(meta)
	if err != nil {
		return line
	}
	if existing := jsonscan.Get(result, "_meta"); len(existing) > 0 && existing[0] == '{' {
		return withMember(line, existing, "acpGuard", mj)
	}
	return withMember(line, result, "_meta", append(append([]byte(`{"acpGuard":`), mj...), '}'))
}
