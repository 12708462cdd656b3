package held

import (
	"fmt"

	"github.com/acp-guard/acp-guard/internal/kvstore"
)

// OpenStore opens the store that a --circuits value names
// (kvstore.ParseSpec), beside the circuits: "" or "file" → the FileStore
// in stateDir; "nats://…" or "tls://…" → a NATSStore (bucket
// DefaultBucket); "off" or "memory" → nil (no shared store: prompts are
// not published). Anything else is an error.
func OpenStore(spec, stateDir string, nopts NATSOptions) (Store, error) {
	kind, spec, err := kvstore.ParseSpec(spec)
	switch {
	case err != nil:
		return nil, fmt.Errorf("held store: %w", err)
	case kind == kvstore.KindFile:
		return OpenFileStore(stateDir)
	case kind == kvstore.KindNATS:
		return OpenNATS(spec, nopts)
	}
	return nil, nil
}
