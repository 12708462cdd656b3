package pipeline

import (
	"errors"
	"log/slog"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/held"
	"github.com/acp-guard/acp-guard/internal/kvstore"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/presence"
)

// openPresence opens only the presence store spec names, for a live
// session that opens no other store (its policy recovers nothing) but
// was given --circuits: nil for off, memory or a spec no backend takes.
func openPresence(spec, stateDir, version string, log *slog.Logger) (*presence.Store, error) {
	if _, _, err := kvstore.ParseSpec(spec); err != nil {
		return nil, nil
	}
	return presence.OpenStore(spec, storeOptions(stateDir, version))
}

// storeOptions are the options a session opens its stores with: its
// connection name, and the state directory (the default one when
// stateDir is "").
func storeOptions(stateDir, version string) kvstore.Options {
	return kvstore.Options{Dir: stateDir, DefaultDir: policy.DefaultStateDir, Name: "acp-guard " + version}
}

// storeMemory keeps circuits in this process only (Options.Circuits).
const storeMemory = string(kvstore.KindMemory)

// sharedStores are a session's stores for spec: the circuit layer, the
// held-prompt board beside it (nil with circuits off or in memory: held
// prompts are not published, and only the client can act on them), the
// store kind the transcript records ("off" when the session runs without
// circuits), and one closer for both and the NATS connection they share.
type sharedStores struct {
	circuits *circuit.Circuits
	held     *held.Board
	presence *presence.Store // a live session's presence (presence.go); nil: none
	kind     string
	close    func() error
}

// openStores opens the stores spec names ("" already replaced by the
// session's default; kvstore.ParseSpec): the file documents in the state
// directory, the JetStream buckets acp_guard_circuits and acp_guard_held
// over one NATS connection, or the circuits of this process alone. A store
// that cannot be opened is logged and the session runs without it: a turn
// never depends on a store. live: a live session, which publishes its
// presence beside them (the bucket acp_guard_presence on the same
// connection, or presence.json).
func openStores(spec, stateDir, version string, live bool, log *slog.Logger) sharedStores {
	kind, spec, err := kvstore.ParseSpec(spec)
	switch {
	case err != nil:
		log.Warn("circuits off: store unavailable", "err", err)
		return sharedStores{kind: "off"}
	case kind == kvstore.KindOff:
		return sharedStores{kind: "off"}
	}
	o, closeConn, err := kvstore.Share(spec, storeOptions(stateDir, version))
	if err != nil {
		log.Warn("circuits off: store unavailable", "err", err)
		return sharedStores{kind: "off"}
	}
	cs, err := circuit.OpenStore(spec, o)
	if err != nil {
		closeConn()
		log.Warn("circuits off: store unavailable", "err", err)
		return sharedStores{kind: "off"}
	}
	s := sharedStores{circuits: circuit.New(circuit.Config{Store: cs, Logger: log}), kind: string(kind)}
	hs, err := held.OpenStore(spec, o)
	if err != nil {
		log.Warn("held prompts not published: store unavailable", "err", err)
	} else if hs != nil {
		s.held = held.NewBoard(hs, log)
	}
	if live {
		if ps, err := presence.OpenStore(spec, o); err != nil {
			log.Warn("presence not published: store unavailable", "err", err)
		} else {
			s.presence = ps
		}
	}
	s.close = func() error {
		var errs []error
		if s.held != nil {
			errs = append(errs, s.held.Close())
		}
		if s.presence != nil {
			errs = append(errs, s.presence.Close())
		}
		return errors.Join(append(errs, cs.Close(), closeConn())...)
	}
	return s
}
