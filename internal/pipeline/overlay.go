package pipeline

import (
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/internal/platform"
	"github.com/acp-guard/acp-guard/replay"
)

// OverlayStore is the value of Options.CatalogueOverlay (--catalogue-overlay
// store) that takes the overlay published in the circuits' store
// (`acp-guard catalogue publish`) instead of a file; the library's
// OverlayStore is the same value.
const OverlayStore = "store"

// overlayState is one catalogue a session may classify with: the base
// catalogue, or the base merged with an overlay (doc: the overlay
// document; nil for the base alone).
type overlayState struct {
	engine *classify.Engine
	doc    []byte
	hash   [32]byte
}

// overlaySource hands the guard the catalogue of each turn (the guard's
// Config.Catalogue, called on the event loop at every session/prompt):
// the overlay file looked at again (a stat; read only when its size,
// modification time or inode changed; validated only when its content
// did), the store's latest validated overlay (its watch validates off
// the event loop), or a recording's catalogue events. A change is
// recorded in the transcript with the turn it applies from.
type overlaySource struct {
	log  *slog.Logger
	base classify.Catalogue // what overlays merge over, with its fixtures
	bare *classify.Engine   // the base alone (an overlay cleared)
	cur  *overlayState      // what the guard has; event loop only
	turn int                // session/prompts seen; event loop only

	file  string    // the overlay file; "" : none
	stamp fileStamp // of the file when last read
	seen  [32]byte  // hash of the content last read (refused or not)

	pending atomic.Pointer[overlayState] // the store's latest validated overlay
	store   *overlayWatch                // nil: no store

	recorded map[int]*overlayState // a recording's, by turn

	// record writes a catalogue event to the transcript; nil: not recording.
	record func(turn int, version string, doc []byte)
}

// fileStamp is what tells a changed overlay file without reading it.
type fileStamp struct {
	ok               bool
	ino, size, mtime int64
}

func statFile(name string) fileStamp {
	fi, err := os.Stat(name)
	if err != nil {
		return fileStamp{}
	}
	st := fileStamp{ok: true, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	st.ino = int64(platform.FileID(fi))
	return st
}

// overlayBase is the catalogue an overlay merges over for engine: the
// embedded one with its fixtures (catalogue.Default, observed or not,
// holds none), or an operator's catalogue (--catalogue) as loaded.
func overlayBase(engine *classify.Engine) (classify.Catalogue, error) {
	c := engine.Catalogue()
	if len(c.Fixtures) == 0 && c.Version == catalogue.Default().Version() {
		return catalogue.Embedded()
	}
	return c, nil
}

// readOverlayFile reads an overlay file, bounded.
func readOverlayFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, catalogue.MaxOverlayBytes+1))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// loadOverlayFile reads and validates the overlay file name over engine's
// catalogue (Options.Load: a refusal is a configuration error).
func loadOverlayFile(name string, engine *classify.Engine) (*catalogue.Overlay, error) {
	base, err := overlayBase(engine)
	if err != nil {
		return nil, err
	}
	b, err := readOverlayFile(name)
	if err != nil {
		return nil, fieldErr("CatalogueOverlay", "", err)
	}
	o, err := catalogue.MergeOverlay(base, b)
	if err != nil {
		return nil, fieldErr("CatalogueOverlay", name, err)
	}
	return o, nil
}

// newFileOverlay is the source of a session started with an overlay file
// already validated (o; nil when Options.Load did not run, then it is read
// here).
func newFileOverlay(name string, o *catalogue.Overlay, engine *classify.Engine, log *slog.Logger) (*overlaySource, error) {
	base, err := overlayBase(engine)
	if err != nil {
		return nil, err
	}
	st := statFile(name)
	if o == nil {
		if o, err = loadOverlayFile(name, engine); err != nil {
			return nil, err
		}
	}
	s := &overlaySource{log: log, base: base, bare: engine, file: name, stamp: st}
	s.cur = &overlayState{engine: engine.ObservedAs(o.Engine), doc: o.Doc, hash: sha256.Sum256(o.Doc)}
	s.seen = s.cur.hash
	log.Info("catalogue overlay in use", "version", o.Engine.Version(), "file", name, "added", len(o.Added), "overridden", len(o.Changed))
	return s, nil
}

// next is the guard's Config.Catalogue: the engine of the turn that
// starts.
func (s *overlaySource) next() *classify.Engine {
	s.turn++
	var st *overlayState
	switch {
	case s.recorded != nil:
		st = s.recorded[s.turn]
	case s.file != "":
		st = s.lookFile()
	case s.store != nil:
		st = s.pending.Load()
	}
	if st != nil && st != s.cur {
		s.cur = st
		if s.record != nil {
			s.record(s.turn, st.engine.Version(), st.doc)
		}
		if s.recorded == nil {
			s.log.Info("catalogue overlay picked up", "version", st.engine.Version(), "turn", s.turn)
		}
	}
	return s.cur.engine
}

// lookFile returns the file's overlay when it changed and validates, else
// nil (the catalogue in use is kept; a refusal is logged once per
// content).
func (s *overlaySource) lookFile() *overlayState {
	st := statFile(s.file)
	if st == s.stamp {
		return nil
	}
	s.stamp = st
	if !st.ok {
		s.log.Warn("catalogue overlay file unreadable; the catalogue in use is kept", "file", s.file)
		return nil
	}
	b, err := readOverlayFile(s.file)
	if err != nil {
		s.log.Warn("catalogue overlay file unreadable; the catalogue in use is kept", "file", s.file, "err", err)
		return nil
	}
	h := sha256.Sum256(b)
	if h == s.seen {
		return nil
	}
	s.seen = h
	o, err := catalogue.MergeOverlay(s.base, b)
	if err != nil {
		s.log.Warn("catalogue overlay refused; the catalogue in use is kept", "file", s.file, "err", err, "catalogue", s.cur.engine.Version())
		return nil
	}
	return &overlayState{engine: s.bare.ObservedAs(o.Engine), doc: o.Doc, hash: h}
}

// recordedOverlays builds the source of a recorded session from its
// catalogue events: each is validated again over engine's catalogue (a
// refused one is a note, and the catalogue before it stays), applied
// from the turn it names. ok is false when the recording has none.
func recordedOverlays(events []replay.Event, engine *classify.Engine, log *slog.Logger) (s *overlaySource, notes []string, ok bool) {
	for _, ev := range events {
		if ev.Dir != replay.DirCatalogue {
			continue
		}
		if s == nil {
			base, err := overlayBase(engine)
			if err != nil {
				return nil, []string{fmt.Sprintf("catalogue events ignored: %v", err)}, false
			}
			s = &overlaySource{log: log, base: base, bare: engine, recorded: map[int]*overlayState{}}
			s.cur = &overlayState{engine: engine}
		}
		st := &overlayState{engine: engine}
		if ev.Overlay != nil {
			o, err := catalogue.MergeOverlay(s.base, ev.Overlay)
			if err != nil {
				notes = append(notes, fmt.Sprintf("line %d: recorded catalogue overlay %s refused: %v", ev.Line, ev.Catalogue, err))
				continue
			}
			// Observed like the replay's engine: classify --transcript
			// sees the overlay's verdicts too.
			st = &overlayState{engine: engine.ObservedAs(o.Engine), doc: o.Doc, hash: sha256.Sum256(o.Doc)}
		}
		if st.engine.Version() != ev.Catalogue {
			notes = append(notes, fmt.Sprintf("line %d: recorded catalogue %s, replayed with %s", ev.Line, ev.Catalogue, st.engine.Version()))
		}
		if ev.Turn == 0 {
			s.cur = st
		} else {
			s.recorded[ev.Turn] = st
		}
	}
	return s, notes, s != nil
}
