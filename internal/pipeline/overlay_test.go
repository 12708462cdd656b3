package pipeline

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/catalogue"
	"github.com/acp-guard/acp-guard/internal/natstest"
	"github.com/acp-guard/acp-guard/internal/syncio"
)

// overlayWatchdog bounds a wait for what must come (a hang guard, not a
// timing assertion).
const overlayWatchdog = 30 * time.Second

func drainedOverlay(t *testing.T, version string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../catalogue/testdata/overlay-drained.json")
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.Replace(string(b), `"field-1"`, `"`+version+`"`, 1))
}

// awaitLog waits until the log holds text.
func awaitLog(t *testing.T, log *syncio.Buffer, text string) {
	t.Helper()
	for deadline := time.Now().Add(overlayWatchdog); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(log.String(), text) {
			return
		}
	}
	t.Fatalf("log never said %q:\n%s", text, log.String())
}

// A store-published overlay is read at the start and followed by the
// watch; one that does not validate (written into the store behind
// publish's back) is refused with a warning and the catalogue in use is
// kept; a clearing goes back to the embedded catalogue. Each change is
// handed to the recorder with the turn it applies from. On the file
// store and through NATS.
func TestStoreOverlayFollowsThePublished(t *testing.T) {
	t.Parallel()
	embedded := catalogue.Default().Version()
	for _, tt := range []struct{ name, spec string }{{"file", "file"}, {"nats", ""}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec, dir := tt.spec, t.TempDir()
			if spec == "" {
				spec = natstest.Start(t).URL()
			}
			ctx := context.Background()
			if _, err := PublishOverlay(ctx, spec, dir, "", drainedOverlay(t, "v1")); err != nil {
				t.Fatal(err)
			}
			var buf syncio.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
			src, err := newStoreOverlay(spec, dir, "", "test", catalogue.Default(), log)
			if err != nil {
				t.Fatal(err)
			}
			defer src.store.close()
			type change struct {
				turn    int
				version string
				doc     bool
			}
			var changes []change
			src.record = func(turn int, version string, doc []byte) {
				changes = append(changes, change{turn, version, doc != nil})
			}
			if got := src.next().Version(); got != embedded+"+v1" {
				t.Fatalf("first turn: %s, want %s+v1", got, embedded)
			}

			// Behind publish's back: a value that is no overlay.
			st, err := openOverlayStore(spec, dir, "test")
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			_, rev, err := st.Get(ctx, overlayKey(""))
			if err != nil {
				t.Fatal(err)
			}
			badDoc := strings.Replace(string(drainedOverlay(t, "v2")), `"match": false`, `"match": true`, 1)
			var compact strings.Builder
			if err := json.NewEncoder(&compact).Encode(json.RawMessage(badDoc)); err != nil {
				t.Fatal(err)
			}
			bad, _ := json.Marshal(publishedOverlay{Version: "v2", Overlay: json.RawMessage(strings.TrimSpace(compact.String()))})
			if err := st.CompareAndSwap(ctx, overlayKey(""), bad, rev); err != nil {
				t.Fatal(err)
			}
			awaitLog(t, &buf, "catalogue overlay refused")
			if got := src.next().Version(); got != embedded+"+v1" {
				t.Errorf("after a refused overlay: %s, want %s+v1 kept", got, embedded)
			}

			if _, err := PublishOverlay(ctx, spec, dir, "", drainedOverlay(t, "v3")); err != nil {
				t.Fatal(err)
			}
			awaitLog(t, &buf, "version="+embedded+"+v3")
			if got := src.next().Version(); got != embedded+"+v3" {
				t.Errorf("after v3: %s", got)
			}
			if _, err := PublishOverlay(ctx, spec, dir, "", nil); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(overlayWatchdog); src.pending.Load().doc != nil && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if got := src.next().Version(); got != embedded {
				t.Errorf("after --clear: %s, want %s", got, embedded)
			}
			want := []change{{3, embedded + "+v3", true}, {4, embedded, false}}
			if len(changes) != len(want) || changes[0] != want[0] || changes[1] != want[1] {
				t.Errorf("recorded %+v, want %+v", changes, want)
			}
		})
	}
}

// Without an overlay configured the session has no source: nothing is
// looked at between turns.
func TestNoOverlayNoSource(t *testing.T) {
	pl := &Pipeline{log: slog.New(slog.DiscardHandler)}
	src, err := pl.catalogueSource(&Options{}, Origin{Argv: []string{"agent"}}, catalogue.Default(), settings{})
	if err != nil || src != nil {
		t.Errorf("got %v, %v; want no source", src, err)
	}
}
