package observers

import "bytes"

// Repeated-text detection. A "run" is the turn's opening text: the raw
// bytes of its visible assistant message chunks, in order, up to
// repeatHead bytes. A turn repeats when a later message chunk begins a
// restatement of that opening — everything streamed before the chunk, or
// its first repeatHead bytes when more was streamed — and the restatement
// is at least repeatMin bytes long. This is what agents that retry on
// their own do (gemini-cli, qwen-code, Copilot CLI re-stream the partial
// answer from its start), while a healthy answer that merely reuses a few
// words does not match: the restatement must cover the whole opening.
//
// Bytes are compared as the agent wrote them (JSON-escaped): one agent
// escapes the same text the same way. The detector keeps a fixed buffer
// per turn and, per chunk, looks at no more than repeatHead bytes
// (nothing at all once the opening is full and no restatement can start),
// compared and copied in bulk: it neither allocates nor grows with the
// turn or the chunk.

const (
	repeatHead = 64 // bytes of the opening kept
	repeatMin  = 16 // shortest restatement that counts
	// repeatCap bounds the count: past it the detector stops looking, so
	// an agent looping on one chunk costs nothing more.
	repeatCap = 16
)

// repeatState is the detector's per-turn state.
type repeatState struct {
	head    [repeatHead]byte
	n       uint8 // bytes of head filled
	target  uint8 // length of the restatement being matched (0: none)
	m       uint8 // bytes matched so far
	times   uint16
	longest uint8
	run     uint8 // the opening's length, once a restatement showed it (0: unknown)
}

// Repeats returns how often the turn's opening was restated (at most
// repeatCap: counting stops there) and the length of the longest
// restatement, in bytes.
func (t *Turn) Repeats() (times, bytes int) { return int(t.repeat.times), int(t.repeat.longest) }

// observeText feeds one visible message chunk's raw JSON string to the
// detector. It looks at no more than the bytes it still needs (at most
// repeatHead), compared and copied in bulk. A restart may be set off from
// the cut answer by a line break or spaces at the start of its first
// chunk: the restatement is matched after them.
func (t *Turn) observeText(raw []byte) {
	in := rawInner(raw)
	r := &t.repeat
	if r.times >= repeatCap {
		return
	}
	if r.target == 0 && r.n >= repeatMin {
		// A chunk boundary: a restatement may start here.
		r.target, r.m = r.n, 0
		if r.run != 0 {
			r.target = r.run // later passes restate the same run
		}
	}
	match := in
	if r.target != 0 && r.m == 0 {
		match = skipSpace(in)
	}
	if r.target != 0 && r.m == 0 && r.n == repeatHead && (len(match) == 0 || match[0] != r.head[0]) {
		r.target = 0 // the common case: this chunk does not restate the opening
		return
	}
	if r.target != 0 {
		need := int(r.target - r.m)
		seg := match[:min(need, len(match))]
		if bytes.IndexByte(seg, '"') >= 0 {
			seg = seg[:stringEnd(seg)]
		}
		r.match(seg)
	}
	if need := repeatHead - int(r.n); need > 0 {
		seg := in[:min(need, len(in))]
		if bytes.IndexByte(seg, '"') >= 0 {
			seg = seg[:stringEnd(seg)] // the string may end inside the window
		}
		r.n += uint8(copy(r.head[r.n:], seg))
	}
}

// skipSpace returns b (a JSON string's inner bytes) after its leading
// spaces, tabs and escaped line breaks.
func skipSpace(b []byte) []byte {
	for len(b) > 0 {
		switch {
		case b[0] == ' ' || b[0] == '\t':
			b = b[1:]
		case len(b) > 1 && b[0] == '\\' && (b[1] == 'n' || b[1] == 'r' || b[1] == 't'):
			b = b[2:]
		default:
			return b
		}
	}
	return b
}

// stringEnd returns the offset of the first unescaped quote in b (the
// end of the JSON string b starts), or len(b).
func stringEnd(b []byte) int {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(b)
}

// match matches seg against the opening while a restatement is being
// matched.
func (r *repeatState) match(seg []byte) {
	want := r.head[r.m:r.target]
	k := min(len(seg), len(want))
	switch {
	case !bytes.Equal(seg[:k], want[:k]):
		r.target, r.m = 0, 0
	case int(r.m)+k == int(r.target):
		r.times++
		r.longest = max(r.longest, r.target)
		if r.run == 0 {
			r.run = r.target
		}
		r.target, r.m = 0, 0
	default:
		r.m += uint8(k)
	}
}
