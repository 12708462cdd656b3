package main

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/cmd/acp-guard/internal/console"
	"github.com/acp-guard/acp-guard/held"
	"github.com/acp-guard/acp-guard/presence"
)

// consoleFleet is how many sessions the scale test puts in the store.
const consoleFleet = 200

// The console over a fleet's worth of state — 200 live sessions (each
// with ProviderErrors in the hour), 200 held prompts of those processes
// and 200 circuits, in the file store — lists them all; the
// page's load time and the live part's refresh are logged (figures, not
// assertions: docs/OPERATIONS.md quotes them).
func TestConsoleScale(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	hs, err := held.OpenStore("file", held.Options{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	b := held.NewBoard(hs, nil)
	defer b.Close()
	cs, err := circuit.OpenStore("file", circuit.Options{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ps, err := presence.OpenStore("file", presence.Options{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	ctx := context.Background()
	now := time.Now().UTC()
	next := now.Add(time.Hour)
	for i := range consoleFleet {
		pp, err := held.ProcessPrefix(circuit.DefaultNamespace, fmt.Sprintf("host-%d/%d/g", i%20, 1000+i))
		if err != nil {
			t.Fatal(err)
		}
		sid := fmt.Sprintf("sess-%03d", i)
		e := held.Entry{Version: held.EntryVersion, Namespace: circuit.DefaultNamespace, Host: fmt.Sprintf("host-%d", i%20), PID: 1000 + i,
			SessionID: sid, RequestID: "3", Agent: "codex-acp", Model: "gpt-5", Code: "provider_overloaded", Class: "transient",
			State: "retry_wait", Hold: 1, Since: now, Next: &next, MaxRetries: 10, Offered: held.Actions, Expires: now.Add(2 * time.Minute), UpdatedAt: now}
		if _, err := b.Put(ctx, held.ID(pp, sid, "3"), e, now); err != nil {
			t.Fatal(err)
		}
		key, err := circuit.Key{Provider: fmt.Sprintf("agent-%d", i%10), Model: fmt.Sprintf("model-%d", i), Scope: "provider"}.Normalize()
		if err != nil {
			t.Fatal(err)
		}
		rec := circuit.Record{Key: key, OpenUntil: now.Add(10 * time.Minute), OpenedAt: now, Code: "rate_limited", Class: "transient", Failures: 1, Epoch: 1, UpdatedAt: now}
		if err := cs.CompareAndSwap(ctx, key.ID(), rec, 0); err != nil {
			t.Fatal(err)
		}
		holder := fmt.Sprintf("host-%d/%d/1", i%20, 1000+i)
		pr := presence.Record{Version: presence.Version, Namespace: circuit.DefaultNamespace, Holder: holder, Host: fmt.Sprintf("host-%d", i%20),
			PID: 1000 + i, Agent: fmt.Sprintf("agent-%d", i%10), Model: "gpt-5", State: "retry_wait", Turn: 3, InFlight: 1, SessionID: sid,
			Started: now, Heartbeat: now, Expires: now.Add(time.Hour)}
		pr.Count("provider_overloaded", "transient", now)
		pr.Count("rate_limited", "transient", now.Add(-30*time.Minute))
		pkey, err := presence.Key(circuit.DefaultNamespace, holder)
		if err != nil {
			t.Fatal(err)
		}
		if err := ps.Put(ctx, pkey, pr, 0); err != nil {
			t.Fatal(err)
		}
	}

	o := &consoleOptions{}
	o.held.stateDir = state
	src, _, closeStores, err := consoleSource(o)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStores()
	srv, err := console.New(console.Options{Source: src, Store: "file"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	measure := func(path string) (time.Duration, string) {
		var ds []time.Duration
		var body string
		for range 20 {
			start := time.Now()
			resp, err := ts.Client().Get(ts.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ds = append(ds, time.Since(start))
			body = string(b)
		}
		slices.Sort(ds)
		t.Logf("GET %s with %d live sessions, %d held prompts and %d circuits: median %s, max %s, %d bytes", path, consoleFleet, consoleFleet, consoleFleet,
			ds[len(ds)/2].Round(100*time.Microsecond), ds[len(ds)-1].Round(100*time.Microsecond), len(body))
		return ds[len(ds)/2], body
	}
	_, page := measure("/")
	measure("/state")
	if n := strings.Count(page, `<tr class="held"`); n != consoleFleet {
		t.Errorf("the page lists %d held prompts, want %d", n, consoleFleet)
	}
	if n := strings.Count(page, `<tr class="circuit `); n != consoleFleet {
		t.Errorf("the page lists %d circuits, want %d", n, consoleFleet)
	}
	if n := strings.Count(page, `<tr class="session"`); n != consoleFleet {
		t.Errorf("the page lists %d live sessions, want %d", n, consoleFleet)
	}
	// 10 agents × 2 codes, each 20 sessions' worth.
	if n := strings.Count(page, `<tr class="errors"`); n != 20 || !strings.Contains(page, `data-n="20"`) {
		t.Errorf("the chart has %d rows, want 20 of 20 errors each", n)
	}
}
