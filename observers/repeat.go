package observers

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
// per turn and, per chunk, compares at most the bytes it still needs
// (usually one), so it neither allocates nor grows with the turn.

const (
	repeatHead = 64 // bytes of the opening kept
	repeatMin  = 16 // shortest restatement that counts
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

// Repeats returns how often the turn's opening was restated and the length
// of the longest restatement, in bytes.
func (t *Turn) Repeats() (times, bytes int) { return int(t.repeat.times), int(t.repeat.longest) }

// observeText feeds one visible message chunk's raw JSON string to the
// detector.
func (t *Turn) observeText(raw []byte) {
	in := rawInner(raw)
	r := &t.repeat
	if r.target == 0 && r.n >= repeatMin {
		// A chunk boundary: a restatement may start here.
		r.target, r.m = r.n, 0
		if r.run != 0 {
			r.target = r.run // later passes restate the same run
		}
	}
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c == '"' {
			break // the closing quote; escaped quotes are skipped as pairs
		}
		if c == '\\' && i+1 < len(in) {
			if !r.feed(c) {
				return
			}
			i++
			c = in[i]
		}
		if !r.feed(c) {
			return
		}
	}
}

// feed takes one byte; it reports whether more bytes of the same chunk
// are of any use.
func (r *repeatState) feed(c byte) bool {
	filling := int(r.n) < repeatHead
	if filling {
		r.head[r.n] = c
		r.n++
	}
	if r.target == 0 {
		return filling
	}
	if r.head[r.m] != c {
		r.target, r.m = 0, 0
		return filling
	}
	r.m++
	if r.m == r.target {
		if r.times < 1<<16-1 {
			r.times++
		}
		r.longest = max(r.longest, r.target)
		if r.run == 0 {
			r.run = r.target
		}
		r.target, r.m = 0, 0
		return filling
	}
	return true
}
