package observers

import (
	"regexp"
	"strings"
	"unicode"
)

// ControlSignature describes an adapter's control chunk: assistant text
// that is really a diagnostic about the provider. A match is suppressed
// and leaves a pending marker on the turn; at prompt return a pending
// marker turns a successful completion into one ProviderError carrying
// Diagnostic (a constant: raw chunk text never reaches structured fields).
// Signatures are data: the orchestration code never branches on them.
type ControlSignature struct {
	Name       string         // stable name, e.g. "cursor.retriable"
	Adapter    string         // the only adapter it applies to
	Prefix     string         // compared case-insensitively after trimming
	MaxSuffix  int            // the suffix after the prefix must be 1..MaxSuffix bytes after trimming
	Veto       *regexp.Regexp // a suffix matching this does not match
	Diagnostic string         // the constant error message at prompt return
	Source     string         // ProviderError.source, e.g. "cursor_acp"
}

// CursorRetriable is the Cursor normal-completion failure projection
// (spec 000, "Cursor normal-completion failure projection").
var CursorRetriable = ControlSignature{
	Name:      "cursor.retriable",
	Adapter:   AdapterCursor,
	Prefix:    "Error: RetriableError:",
	MaxSuffix: 256,
	// Context cancellation, deadlines and retry escalation veto the match;
	// Cursor's own "[canceled]" status label does not.
	Veto:       regexp.MustCompile(`(?i)\bcontext\s+(?:cancel+ed|deadline\s+exceeded)\b|\bdeadline\s+exceeded\b|\bescalat(?:e|ed|es|ing|ion)\b|\bexceeded\s+(?:the\s+)?retry\s+limit\b|\bretr(?:y|ies)\s+(?:limit|budget)\s+(?:exceeded|exhausted|reached)\b|\bmax(?:imum)?\s+retries\s+(?:exceeded|reached)\b`),
	Diagnostic: "Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)",
	Source:     "cursor_acp",
}

// DefaultSignatures are the built-in control-chunk signatures.
var DefaultSignatures = []ControlSignature{CursorRetriable}

// WindowBytes is how much of a chunk's text the observers decode: enough
// for any signature's prefix, its longest suffix, and surrounding space.
const WindowBytes = 1024

// Match reports whether text (the decoded chunk; complete says whether it
// is the whole chunk) is this signature's control chunk for adapter.
// Checks run in the spec's order: identity, then prefix, then suffix.
func (s *ControlSignature) Match(adapter, text string, complete bool) bool {
	if adapter != s.Adapter || !complete {
		return false
	}
	t := strings.TrimFunc(text, unicode.IsSpace)
	if len(t) < len(s.Prefix) || !strings.EqualFold(t[:len(s.Prefix)], s.Prefix) {
		return false
	}
	suffix := strings.TrimFunc(t[len(s.Prefix):], unicode.IsSpace)
	if suffix == "" || len(suffix) > s.MaxSuffix {
		return false
	}
	if s.Veto != nil && s.Veto.MatchString(suffix) {
		return false
	}
	return true
}

// Suffix returns the trimmed text after the prefix of a matching chunk.
func (s *ControlSignature) Suffix(text string) string {
	t := strings.TrimFunc(text, unicode.IsSpace)
	if len(t) < len(s.Prefix) {
		return ""
	}
	return strings.TrimFunc(t[len(s.Prefix):], unicode.IsSpace)
}
