package pipeline

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/internal/kvstore"
)

// The overlay's place in the circuits' store: beside the circuits and the
// held prompts, in a document or bucket of its own (their values expire;
// an overlay does not), one key per circuit namespace.
const (
	overlayFileName   = "catalogue-overlay.json"
	overlayLockName   = "catalogue-overlay.lock"
	overlayFileFormat = "acp-guard.catalogue-overlay/1"
	overlayBucket     = "acp_guard_catalogue"
	overlayKeyPrefix  = "overlay."
	overlayMaxValue   = catalogue.MaxOverlayBytes + 4<<10
	// overlayReadTimeout bounds the store read at a session's start.
	overlayReadTimeout = 2 * time.Second
)

// publishedOverlay is the store's value: an overlay document, or a
// clearing (Cleared: sessions go back to the base catalogue).
type publishedOverlay struct {
	Version     string          `json:"version,omitempty"`
	SHA256      string          `json:"sha256,omitempty"`
	Cleared     bool            `json:"cleared,omitempty"`
	PublishedAt time.Time       `json:"publishedAt"`
	Overlay     json.RawMessage `json:"overlay,omitempty"`
}

func overlayKey(namespace string) string {
	return overlayKeyPrefix + cmp.Or(namespace, "default")
}

// overlaySchema is the overlay's document or bucket in every shared
// backend.
var overlaySchema = kvstore.Schema{
	Shared: true, // its callers name it in their errors
	File: kvstore.FileOptions{Name: overlayFileName, LockName: overlayLockName,
		Format: overlayFileFormat, Member: "overlay", MaxBytes: 4 * overlayMaxValue, MaxEntries: 256},
	NATS: kvstore.NATSOptions{Bucket: overlayBucket,
		Description: "acp-guard catalogue overlays (" + overlayFileFormat + ")", MaxValue: overlayMaxValue},
}

// openOverlayStore opens the overlay's store for a --circuits value:
// the document in the state directory, or the JetStream bucket
// acp_guard_catalogue. Off and memory have none.
func openOverlayStore(spec, stateDir, version string) (kvstore.Store, error) {
	kind, _, err := kvstore.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	st, err := kvstore.Open(spec, overlaySchema, storeOptions(stateDir, version))
	if st == nil && err == nil {
		return nil, fmt.Errorf("the circuit store %s keeps no catalogue overlay: want file or a nats:// URL", kind)
	}
	return st, err
}

// PublishOverlay validates the overlay document doc over the
// embedded catalogue and publishes it under the circuit namespace in the
// store that circuits names (a --circuits value: file, in stateDir, or a
// nats:// URL), where every session started with --catalogue-overlay
// store picks it up between turns. doc nil clears the published overlay.
// It returns the version sessions will report (embedded+overlay, or the
// embedded one for a clearing).
func PublishOverlay(ctx context.Context, circuits, stateDir, namespace string, doc []byte) (string, error) {
	val := publishedOverlay{PublishedAt: time.Now().UTC(), Cleared: doc == nil}
	version := catalogue.Default().Version()
	if doc != nil {
		o, err := catalogue.ParseOverlay(doc)
		if err != nil {
			return "", err
		}
		var b bytes.Buffer
		if err := json.Compact(&b, doc); err != nil {
			return "", err
		}
		sum := sha256.Sum256(b.Bytes())
		val.Version, val.SHA256, val.Overlay, version = o.Version, hex.EncodeToString(sum[:]), b.Bytes(), o.Engine.Version()
	}
	raw, err := json.Marshal(val)
	if err != nil {
		return "", err
	}
	st, err := openOverlayStore(circuits, stateDir, "publish")
	if err != nil {
		return "", fmt.Errorf("catalogue overlay store: %w", err)
	}
	defer st.Close()
	key := overlayKey(namespace)
	for {
		_, rev, err := st.Get(ctx, key)
		if err == nil {
			err = st.CompareAndSwap(ctx, key, raw, rev)
		}
		switch {
		case err == nil:
			return version, nil
		case errors.Is(err, kvstore.ErrConflict) && ctx.Err() == nil:
			continue // another publisher: read again and replace
		}
		return "", fmt.Errorf("catalogue overlay store: %w", err)
	}
}

// overlayWatch follows the overlay published in a store: it reads it when
// the session starts and then watches the key; each new value is
// validated on the watch's goroutine, never on the event loop, and left
// in src.pending for the next turn. A refused overlay is logged and
// changes nothing.
type overlayWatch struct {
	st   kvstore.Store
	key  string
	src  *overlaySource
	log  *slog.Logger
	rev  uint64 // the revision last handled (watch goroutine, then start)
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	stop func() // the store's watch, once started
}

// newStoreOverlay opens the store, reads the published overlay (bounded:
// an unreachable store leaves the base catalogue, and the watch picks
// the overlay up when the store answers) and starts the watch.
func newStoreOverlay(spec, stateDir, namespace, version string, engine *classify.Engine, log *slog.Logger) (*overlaySource, error) {
	base, err := overlayBase(engine)
	if err != nil {
		return nil, err
	}
	st, err := openOverlayStore(spec, stateDir, version)
	if err != nil {
		return nil, fieldErr("CatalogueOverlay", OverlayStore, err)
	}
	s := &overlaySource{log: log, base: base, bare: engine}
	s.cur = &overlayState{engine: engine}
	w := &overlayWatch{st: st, key: overlayKey(namespace), src: s, log: log, done: make(chan struct{})}
	s.store = w
	ctx, cancel := context.WithTimeout(context.Background(), overlayReadTimeout)
	b, rev, err := st.Get(ctx, w.key)
	cancel()
	switch {
	case err != nil:
		log.Warn("catalogue overlay store unavailable; classifying with the base catalogue until it answers", "err", err)
	case b != nil:
		w.rev = rev
		if ost := w.validate(b); ost != nil {
			s.cur = ost
			log.Info("catalogue overlay in use", "version", ost.engine.Version(), "store", "published")
		}
	}
	w.wg.Add(1)
	// The watch's starter: it retries a store that does not answer (a
	// NATS server down) until the watch runs or close is called; close
	// waits for it and then stops the watch.
	go w.start()
	return s, nil
}

func (w *overlayWatch) start() {
	defer w.wg.Done()
	wait := 250 * time.Millisecond
	for {
		stop, err := w.st.Watch(w.key, w.changed)
		if err == nil {
			w.mu.Lock()
			w.stop = stop
			w.mu.Unlock()
			// Anything published between the first read and the watch.
			ctx, cancel := context.WithTimeout(context.Background(), overlayReadTimeout)
			if b, rev, err := w.st.Get(ctx, w.key); err == nil && b != nil {
				w.changed(kvstore.Item{Key: w.key, Rev: rev, Value: b})
			}
			cancel()
			return
		}
		select {
		case <-w.done:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// changed handles a value of the key (the watch's goroutine; start's
// once).
func (w *overlayWatch) changed(it kvstore.Item) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if it.Key != w.key || it.Rev == w.rev {
		return
	}
	w.rev = it.Rev
	if st := w.validate(it.Value); st != nil {
		w.src.pending.Store(st)
		w.log.Info("catalogue overlay validated; used from the next turn", "version", st.engine.Version())
	}
}

// validate decodes and validates a published value; nil: refused (logged).
func (w *overlayWatch) validate(b []byte) *overlayState {
	var v publishedOverlay
	if err := json.Unmarshal(b, &v); err != nil {
		w.log.Warn("catalogue overlay refused; the catalogue in use is kept", "err", fmt.Errorf("store value: %w", err))
		return nil
	}
	if v.Cleared {
		return &overlayState{engine: w.src.bare}
	}
	o, err := catalogue.MergeOverlay(w.src.base, v.Overlay)
	if err != nil {
		w.log.Warn("catalogue overlay refused; the catalogue in use is kept", "err", err)
		return nil
	}
	return &overlayState{engine: w.src.bare.ObservedAs(o.Engine), doc: o.Doc, hash: sha256.Sum256(o.Doc)}
}

// close ends the watch and closes the store.
func (w *overlayWatch) close() error {
	close(w.done)
	w.wg.Wait()
	w.mu.Lock()
	stop := w.stop
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
	return w.st.Close()
}
