package kvstore

import "strings"

// Kind is the store a spec names (ParseSpec): a backend's, or off.
type Kind string

// The kinds of store.
const (
	KindFile   Kind = "file"   // "" or "file": the documents in the state directory (File)
	KindNATS   Kind = "nats"   // "nats://…" or "tls://…", comma-separated servers allowed (NATS)
	KindOff    Kind = "off"    // nothing shared
	KindMemory Kind = "memory" // this process only (Memory)
)

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
