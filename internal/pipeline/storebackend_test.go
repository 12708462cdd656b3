package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/held"
	"github.com/acp-guard/acp-guard/internal/kvstore"
	"github.com/acp-guard/acp-guard/presence"
)

var errFault = errors.New("fault injected")

// faultBackend is a store backend only this test knows: "fault://…"
// keeps each view's values in a memory store of its own, shared by every
// open of that view (as a server would), counts what the views do, and
// fails every call while fail is set.
type faultBackend struct {
	mu     sync.Mutex
	views  map[string]*kvstore.Memory // by the schema's bucket name
	fail   atomic.Bool
	writes atomic.Int64
	shares atomic.Int64
}

func (b *faultBackend) open(_ string, s kvstore.Schema, o kvstore.Options) (kvstore.Store, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bucket := s.NATS.Bucket
	if b.views[bucket] == nil {
		b.views[bucket] = kvstore.NewMemory()
	}
	return faultStore{b.views[bucket], b}, nil
}

func (b *faultBackend) share(_ string, o kvstore.Options) (kvstore.Options, func() error, error) {
	b.shares.Add(1)
	return o, func() error { return nil }, nil
}

// view returns the values the backend keeps in bucket.
func (b *faultBackend) view(bucket string) *kvstore.Memory {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.views[bucket]
}

type faultStore struct {
	*kvstore.Memory
	b *faultBackend
}

func (s faultStore) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	if s.b.fail.Load() {
		return nil, 0, errFault
	}
	return s.Memory.Get(ctx, key)
}

func (s faultStore) CompareAndSwap(ctx context.Context, key string, value []byte, rev uint64) error {
	if s.b.fail.Load() {
		return errFault
	}
	s.b.writes.Add(1)
	return s.Memory.CompareAndSwap(ctx, key, value, rev)
}

func (s faultStore) Close() error { return nil } // the values stay, as on a server

// TestRegisteredBackendServesEveryView is the seam of the one opener: a
// backend registered here, in no store package, is accepted by Config,
// and serves the circuits, the held prompts, presence and the catalogue
// overlay through the same kvstore.Open — each in its own bucket, each
// failure said in the view's own terms — and a session's stores share
// its connection (Share).
func TestRegisteredBackendServesEveryView(t *testing.T) {
	b := &faultBackend{views: map[string]*kvstore.Memory{}}
	t.Cleanup(kvstore.Register(kvstore.Backend{Kind: "fault", Want: "a fault:// URL",
		Match: func(spec string) bool { return strings.HasPrefix(spec, "fault://") },
		Open:  b.open, Share: b.share}))
	const spec = "fault://seam"
	ctx := context.Background()
	if err := (&Options{Circuits: spec, CatalogueOverlay: OverlayStore}).validate(); err != nil {
		t.Fatalf("Options with a registered backend: %v", err)
	}

	cs, err := circuit.OpenStore(spec, kvstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := circuit.Key{Provider: "p", Scope: "provider"}.Normalize()
	if err := cs.CompareAndSwap(ctx, key.ID(), circuit.Record{Key: key, Failures: 1}, 0); err != nil {
		t.Fatal(err)
	}
	if recs, err := cs.List(ctx); err != nil || len(recs) != 1 || recs[0].Failures != 1 {
		t.Fatalf("circuits List = %+v, %v", recs, err)
	}

	hs, err := held.OpenStore(spec, kvstore.Options{})
	if err != nil || hs == nil {
		t.Fatalf("held.OpenStore = %v, %v", hs, err)
	}
	id := held.ID("h.default.", "s1", "7")
	if err := hs.CompareAndSwap(ctx, id, held.Entry{Namespace: "default", SessionID: "s1", RequestID: "7"}, 0); err != nil {
		t.Fatal(err)
	}
	if es, err := hs.List(ctx, "h."); err != nil || len(es) != 1 || es[0].Entry.SessionID != "s1" {
		t.Fatalf("held List = %+v, %v", es, err)
	}

	ps, err := presence.OpenStore(spec, kvstore.Options{})
	if err != nil || ps == nil {
		t.Fatalf("presence.OpenStore = %v, %v", ps, err)
	}
	pk, _ := presence.Key("default", "h/1/1")
	if err := ps.Put(ctx, pk, presence.Record{Version: presence.Version, Namespace: "default", Holder: "h/1/1"}, 0); err != nil {
		t.Fatal(err)
	}
	if r, _, err := ps.Get(ctx, pk); err != nil || r == nil || r.Holder != "h/1/1" {
		t.Fatalf("presence Get = %+v, %v", r, err)
	}

	if _, err := PublishOverlay(ctx, spec, "", "", nil); err != nil {
		t.Fatalf("PublishCatalogueOverlay: %v", err)
	}
	if v, _, _ := b.view(overlayBucket).Get(ctx, overlayKey("")); !strings.Contains(string(v), `"cleared":true`) {
		t.Fatalf("the overlay's value = %s, want a clearing", v)
	}
	for _, bucket := range []string{circuit.DefaultBucket, held.DefaultBucket, presence.DefaultBucket, overlayBucket} {
		if b.view(bucket) == nil {
			t.Errorf("no view opened the bucket %s", bucket)
		}
	}
	if got := b.writes.Load(); got != 4 {
		t.Errorf("the backend saw %d writes, want 4 (one per view)", got)
	}

	// A live session opens its three stores over one shared connection.
	ss := openStores(spec, "", "test", true, slog.New(slog.DiscardHandler))
	if ss.circuits == nil || ss.held == nil || ss.presence == nil || ss.kind != "fault" || b.shares.Load() != 1 {
		t.Fatalf("openStores = %+v, %d shares; want circuits, held, presence over one", ss, b.shares.Load())
	}
	if err := ss.close(); err != nil {
		t.Fatal(err)
	}

	// A failing backend is said in each view's terms.
	b.fail.Store(true)
	_, _, cerr := cs.Get(ctx, key.ID())
	_, _, herr := hs.Get(ctx, id)
	_, _, perr := ps.Get(ctx, pk)
	for _, tt := range []struct {
		err  error
		what string
	}{{cerr, "circuit store: "}, {herr, "held store: "}, {perr, "presence store: "}} {
		if !errors.Is(tt.err, errFault) || !strings.HasPrefix(tt.err.Error(), tt.what) {
			t.Errorf("a fault = %v, want %q and the fault", tt.err, tt.what)
		}
	}
}
