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
	// Kind is KindControl (suppressed, sets the pending marker),
	// KindReport (the same, for chunks that are error lines) or
	// KindDiagnostic (forwarded; neither output for the safety gate nor a
	// clearing event).
	Kind SignatureKind
	// ClassifyText: the ProviderError is classified from the chunk's own
	// text instead of from Diagnostic.
	ClassifyText bool
	Rule         string // the catalogue rule (or "stem*" group) that defines the match ("" for KindReport)
	Adapter      string // the only adapter it applies to (from the rule)
	Prefix       string // the rule's prefix: the observers' cheap prefilter
	Diagnostic   string // the constant error message at prompt return
	Source       string // ProviderError.source, e.g. "cursor_acp"
	// Exclusive: the rule defines the adapter's failures with this prefix
	// completely; text with the prefix it refuses is vetoed from the
	// generic error-line projection (the adapter's rule vetoes).
	Exclusive bool
	// Check is the rule's test of a whole chunk's text (prefix after
	// Unicode trim, suffix bound, vetoes).
	Check func(text string) bool
}

// CursorRetriable is the Cursor normal-completion failure projection
// (docs/WIRE.md); its match is the catalogue rule
// cursor.retriable_stream_reset.v1. It is exclusive: the projection
// defines Cursor's text-reported failures completely, so text
// with its prefix that the rule refuses (cancellation, deadline, retry
// escalation) is not projected by the generic error-line layer either.
var CursorRetriable = ControlSignature{
	Name:       "cursor.retriable",
	Rule:       "cursor.retriable_stream_reset.v1",
	Adapter:    AdapterCursor,
	Prefix:     "Error: RetriableError:",
	Diagnostic: "Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)",
	Source:     "cursor_acp",
	Exclusive:  true,
}

// SignatureKind says what a matching chunk is.
type SignatureKind uint8

const (
	KindControl    SignatureKind = iota // a failure report: suppressed, pending marker
	KindDiagnostic                      // a note: forwarded, not output
	// KindReport: the adapter reports every failure as one chunk of its
	// own, possibly after output ("Error: …" then end_turn). A chunk that
	// is by itself an error line the guard accepts (classify.ParseErrorLine,
	// then a verdict or a provider error shape) is a control chunk,
	// classified from its own text. The generic layer (a turn whose whole
	// visible text is one error line, any adapter) needs no signature;
	// this adds the chunks that follow output.
	KindReport
)

// ReportDiagnostic is the message of the JSON-RPC error a text-reported
// failure becomes (raw chunk text never reaches structured fields).
const ReportDiagnostic = "Error: the agent reported a provider failure as assistant text"

// CopilotError is GitHub Copilot CLI's failure report: every provider
// failure arrives as one assistant chunk "Error: …" followed by end_turn,
// after its own "Info: … Retrying..." notes and sometimes after output
// (testdata/transcripts/real/copilot). One instance of the generic
// error-line projection: Copilot's catalogue rules (copilot.error_*)
// refine the verdict, and are not needed for the chunk to be projected.
var CopilotError = ControlSignature{
	Name:         "copilot.error",
	Kind:         KindReport,
	ClassifyText: true,
	Adapter:      AdapterCopilot,
	Prefix:       "Error:",
	Diagnostic:   ReportDiagnostic,
	Source:       "copilot_cli",
}

// DefaultSignatures are the built-in signatures (unbound). Retry notes
// ("Info: … Retrying...", "Retrying in 2s (attempt 1/3)…") need none:
// classify.ParseNote recognises them for every adapter.
var DefaultSignatures = []ControlSignature{CursorRetriable, CopilotError}

// EvidenceText is the text a pending marker is classified from at prompt
// return: the chunk's own text (text) for ClassifyText signatures, else
// the constant Diagnostic.
func (s *ControlSignature) EvidenceText(text string) string {
	if s.ClassifyText {
		return text
	}
	return s.Diagnostic
}

// ChunkRule is a catalogue rule's control-chunk test, as Bind needs it.
type ChunkRule struct {
	Adapter, Prefix string
	Match           func(text string) bool
}

// Bind returns copies of sigs whose match comes from the catalogue:
// lookup returns the rule a signature names. KindReport signatures (no
// rule) are bound to accept, the guard's test of a chunk of the adapter's
// that is an error line (nil: they stay unbound). A signature whose rule lookup cannot
// provide stays unbound (it never matches) and is reported in missing.
func Bind(sigs []ControlSignature, lookup func(rule string) (ChunkRule, error), accept func(adapter, text string) bool) (out []ControlSignature, missing []error) {
	out = make([]ControlSignature, len(sigs))
	for i, s := range sigs {
		s.Check = nil
		if s.Kind == KindReport {
			if accept != nil {
				adapter := s.Adapter
				s.Check = func(text string) bool { return accept(adapter, text) }
			}
		} else if r, err := lookup(s.Rule); err != nil {
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

// Vetoes reports whether an exclusive signature of adapter vetoes text
// (a turn's whole visible text) from the generic error-line projection:
// the text starts with the signature's prefix and the signature's rule
// refuses it.
func (s *ControlSignature) Vetoes(adapter, text string) bool {
	if !s.Exclusive || adapter != s.Adapter || s.Check == nil {
		return false
	}
	t := strings.TrimFunc(text, unicode.IsSpace)
	if len(t) < len(s.Prefix) || !strings.EqualFold(t[:len(s.Prefix)], s.Prefix) {
		return false
	}
	return !s.Check(t)
}
