package observers

import (
	"strings"
	"unicode"
)

// ControlSignature describes an adapter's control chunk: assistant text
// that is really a diagnostic about the provider. A match is suppressed
// and leaves a pending marker on the turn; at prompt return a pending
// marker turns a successful completion into one ProviderError carrying
// Diagnostic (a constant: raw chunk text never reaches structured fields).
// Signatures are data: the orchestration code never branches on them.
//
// What counts as a control chunk (prefix, suffix bound, vetoes) is defined
// once, by the catalogue rule named in Rule: Bind fills Adapter, Prefix and
// Check from it, so the observer that suppresses a chunk and the
// classifier that names it cannot disagree. An unbound signature (Check
// nil) never matches: the chunk passes through as assistant text.
type ControlSignature struct {
	Name       string // stable name, e.g. "cursor.retriable"
	Rule       string // the catalogue rule that defines the match
	Adapter    string // the only adapter it applies to (from the rule)
	Prefix     string // the rule's prefix: the observers' cheap prefilter
	Diagnostic string // the constant error message at prompt return
	Source     string // ProviderError.source, e.g. "cursor_acp"
	// Check is the rule's test of a whole chunk's text (prefix after
	// Unicode trim, suffix bound, vetoes).
	Check func(text string) bool
}

// CursorRetriable is the Cursor normal-completion failure projection
// (spec 000, "Cursor normal-completion failure projection"); its match is
// the catalogue rule cursor.retriable_stream_reset.v1.
var CursorRetriable = ControlSignature{
	Name:       "cursor.retriable",
	Rule:       "cursor.retriable_stream_reset.v1",
	Adapter:    AdapterCursor,
	Prefix:     "Error: RetriableError:",
	Diagnostic: "Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)",
	Source:     "cursor_acp",
}

// DefaultSignatures are the built-in control-chunk signatures (unbound).
var DefaultSignatures = []ControlSignature{CursorRetriable}

// ChunkRule is a catalogue rule's control-chunk test, as Bind needs it.
type ChunkRule struct {
	Adapter, Prefix string
	Match           func(text string) bool
}

// Bind returns copies of sigs whose match comes from the catalogue:
// lookup returns the rule a signature names. A signature whose rule
// lookup cannot provide stays unbound (it never matches) and is reported
// in missing.
func Bind(sigs []ControlSignature, lookup func(rule string) (ChunkRule, error)) (out []ControlSignature, missing []error) {
	out = make([]ControlSignature, len(sigs))
	for i, s := range sigs {
		s.Check = nil
		if r, err := lookup(s.Rule); err != nil {
			missing = append(missing, err)
		} else {
			s.Adapter, s.Prefix, s.Check = NormalizeAdapter(r.Adapter), r.Prefix, r.Match
		}
		out[i] = s
	}
	return out, missing
}

// WindowBytes is how much of a chunk's text the observers decode: enough
// for any signature's prefix, its longest suffix, and surrounding space.
const WindowBytes = 1024

// Match reports whether text (the decoded chunk; complete says whether it
// is the whole chunk) is this signature's control chunk for adapter.
// Identity is checked first, then the rule (prefix, then suffix).
func (s *ControlSignature) Match(adapter, text string, complete bool) bool {
	if adapter != s.Adapter || !complete || s.Check == nil {
		return false
	}
	return s.Check(text)
}

// Suffix returns the trimmed text after the prefix of a matching chunk.
func (s *ControlSignature) Suffix(text string) string {
	t := strings.TrimFunc(text, unicode.IsSpace)
	if len(t) < len(s.Prefix) {
		return ""
	}
	return strings.TrimFunc(t[len(s.Prefix):], unicode.IsSpace)
}
