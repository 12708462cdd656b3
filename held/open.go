package held

import (
	"fmt"
	"strings"
)

// OpenStore opens the store that a --circuits value names, beside the
// circuits: "" or "file" → the FileStore in stateDir; "nats://…" or
// "tls://…" → a NATSStore (bucket DefaultBucket); "off" or "memory" → nil
// (no shared store: prompts are not published). Anything else is an error.
func OpenStore(spec, stateDir string, nopts NATSOptions) (Store, error) {
	switch spec = strings.TrimSpace(spec); {
	case spec == "" || spec == "file":
		return OpenFileStore(stateDir)
	case spec == "off" || spec == "memory":
		return nil, nil
	case strings.HasPrefix(spec, "nats://") || strings.HasPrefix(spec, "tls://"):
		return OpenNATS(spec, nopts)
	}
	return nil, fmt.Errorf("held store: want file or a nats:// URL (got a value of %d bytes)", len(spec))
}
