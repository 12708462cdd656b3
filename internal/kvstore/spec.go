package kvstore

import (
	"fmt"
	"strings"
)

// Kind is the store a --circuits value (ACP_GUARD_CIRCUITS, the config
// file's "circuits") names; a session's circuits and held prompts use the
// same one.
type Kind string

// The kinds of store.
const (
	KindFile   Kind = "file"   // "" or "file": the documents in the state directory (File)
	KindNATS   Kind = "nats"   // "nats://…" or "tls://…", comma-separated servers allowed (NATS)
	KindOff    Kind = "off"    // nothing shared
	KindMemory Kind = "memory" // this process only (Memory)
)

// ParseSpec says which store spec names, ignoring surrounding spaces, and
// returns the trimmed value (for NATS, the server URLs). Anything else is
// an error naming the value with any password hidden.
func ParseSpec(spec string) (Kind, string, error) {
	spec = strings.TrimSpace(spec)
	switch {
	case spec == "" || spec == string(KindFile):
		return KindFile, spec, nil
	case spec == string(KindOff) || spec == string(KindMemory):
		return Kind(spec), spec, nil
	case strings.HasPrefix(spec, "nats://") || strings.HasPrefix(spec, "tls://"):
		return KindNATS, spec, nil
	}
	return "", "", fmt.Errorf("circuits %q: want off, file, memory or a nats:// URL", redactURL(spec))
}

// redactURL hides the user information (a password, a token) of a
// URL-like value before it is echoed.
func redactURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		return scheme + "://[redacted]@" + rest[at+1:]
	}
	return s
}
