package circuit

import "github.com/acp-guard/acp-guard/internal/kvstore"

// OpenStore opens the store a --circuits value (or ACP_GUARD_CIRCUITS)
// names (kvstore.ParseSpec): "" or "file" → the FileStore in stateDir;
// "nats://…" or "tls://…" (comma-separated server URLs allowed) → a
// NATSStore with nopts; "memory" → NewMemoryStore; "off" → nil (circuits
// off). Anything else is an error naming the value, password hidden.
func OpenStore(spec, stateDir string, nopts NATSOptions) (Store, error) {
	kind, spec, err := kvstore.ParseSpec(spec)
	switch kind {
	case kvstore.KindFile:
		return OpenFileStore(stateDir)
	case kvstore.KindNATS:
		return OpenNATS(spec, nopts)
	case kvstore.KindMemory:
		return NewMemoryStore(), nil
	}
	return nil, err // off: nil, nil
}
