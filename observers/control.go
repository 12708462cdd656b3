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
	Name string // stable name, e.g. "cursor.retriable"
	// Kind is KindControl (suppressed, sets the pending marker) or
	// KindDiagnostic (forwarded; neither output for the safety gate nor a
	// clearing event: an agent's own "retrying" note).
	Kind SignatureKind
	// ClassifyText: the ProviderError is classified from the chunk's text
	// (Prefix + suffix) instead of from Diagnostic.
	ClassifyText bool
	Rule         string // the catalogue rule (or "stem*" group) that defines the match
	Adapter      string // the only adapter it applies to (from the rule)
	Prefix       string // the rule's prefix: the observers' cheap prefilter
	Diagnostic   string // the constant error message at prompt return
	Source       string // ProviderError.source, e.g. "cursor_acp"
	// Check is the rule's test of a whole chunk's text (prefix after
	// Unicode trim, suffix bound, vetoes).
	Check func(text string) bool
}

// CursorRetriable is the Cursor normal-completion failure projection
// (README.md, "What the client receives"); its match is
// the catalogue rule cursor.retriable_stream_reset.v1.
var CursorRetriable = ControlSignature{
	Name:       "cursor.retriable",
	Rule:       "cursor.retriable_stream_reset.v1",
	Adapter:    AdapterCursor,
	Prefix:     "Error: RetriableError:",
	Diagnostic: "Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)",
	Source:     "cursor_acp",
}

// SignatureKind says what a matching chunk is.
type SignatureKind uint8

const (
	KindControl    SignatureKind = iota // a failure report: suppressed, pending marker
	KindDiagnostic                      // a note: forwarded, not output
)

// CopilotError is GitHub Copilot CLI's failure report: every provider
// failure arrives as one assistant chunk "Error: …" followed by end_turn
// (testdata/transcripts/real/copilot). The match is the catalogue group
// copilot.error_* (one rule per kind of failure, so only a failure the
// catalogue recognises is projected); the verdict is classified from the
// chunk's text.
var CopilotError = ControlSignature{
	Name:         "copilot.error",
	Rule:         "copilot.error_*",
	ClassifyText: true,
	Adapter:      AdapterCopilot,
	Prefix:       "Error:",
	Diagnostic:   "Error: the agent reported a provider failure as assistant text",
	Source:       "copilot_cli",
}

// CopilotRetrying is Copilot CLI's retry note, "Info: Request failed due to
// a transient API error. Retrying..." (a diagnostic: the agent retries by
// itself). Bound to the catalogue rule copilot.retry_note.v1.
var CopilotRetrying = ControlSignature{
	Name:    "copilot.retrying",
	Kind:    KindDiagnostic,
	Rule:    "copilot.retry_note.v1",
	Adapter: AdapterCopilot,
	Prefix:  "Info:",
	Source:  "copilot_cli",
}

// DefaultSignatures are the built-in signatures (unbound).
var DefaultSignatures = []ControlSignature{CursorRetriable, CopilotError, CopilotRetrying}

// EvidenceText is the text a pending marker is classified from at prompt
// return: the chunk's own text for ClassifyText signatures, else the
// constant Diagnostic.
func (s *ControlSignature) EvidenceText(suffix string) string {
	if s.ClassifyText {
		return s.Prefix + " " + suffix
	}
	return s.Diagnostic
}

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
