package circuit

import (
	"fmt"
	"strings"
)

// OpenStore opens the store a --circuits value (or ACP_GUARD_CIRCUITS)
// names: "" or "file" → the FileStore in stateDir; "off" → nil (circuits
// off); "nats://…" or "tls://…" (comma-separated server URLs allowed) →
// a NATSStore with nopts. Anything else is an error naming the value.
func OpenStore(spec, stateDir string, nopts NATSOptions) (Store, error) {
	switch {
	case spec == "" || spec == "file":
		return OpenFileStore(stateDir)
	case spec == "off":
		return nil, nil
	case strings.HasPrefix(spec, "nats://") || strings.HasPrefix(spec, "tls://"):
		return OpenNATS(spec, nopts)
	}
	return nil, fmt.Errorf("circuits %q: want off, file, or a nats:// URL", redactURL(spec))
}

// redactURL hides a password in a URL-like value before it is echoed.
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
