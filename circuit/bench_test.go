package circuit

import (
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/natstest"
)

// The store operations' cost, so that the guard's integration knows what a
// question to the circuit costs: the read-only path (a parked session
// asking) and the write path (a failure extending the circuit).

func benchStores(b *testing.B, run func(b *testing.B, c *Circuits)) {
	b.Run("file", func(b *testing.B) {
		st, err := OpenStore("file", Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		run(b, New(Config{Store: st}))
	})
	b.Run("nats", func(b *testing.B) {
		ns := natstest.Start(b)
		st, err := OpenStore(ns.URL(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		run(b, New(Config{Store: st}))
	})
}

func BenchmarkAcquireParked(b *testing.B) {
	benchStores(b, func(b *testing.B, c *Circuits) {
		if _, err := c.Fail(ctx, testKey, transient(t0.Add(time.Hour)), "a", t0); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if d, err := c.Acquire(ctx, testKey, "b", t0.Add(time.Second)); err != nil || d.Action != Park {
				b.Fatal(d, err)
			}
		}
	})
}

// BenchmarkFailOnOpenCircuit is the common case at fleet scale: many
// sessions failing on a circuit already open, which reads and writes
// nothing.
func BenchmarkFailOnOpenCircuit(b *testing.B) {
	benchStores(b, func(b *testing.B, c *Circuits) {
		if _, err := c.Fail(ctx, testKey, backoff(time.Hour), "a", t0); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := c.Fail(ctx, testKey, backoff(time.Second), "b", t0.Add(time.Second)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkFailExtends(b *testing.B) {
	benchStores(b, func(b *testing.B, c *Circuits) {
		i := 0
		for b.Loop() {
			i++
			if _, err := c.Fail(ctx, testKey, transient(t0.Add(time.Duration(i)*time.Second)), "a", t0); err != nil {
				b.Fatal(err)
			}
		}
	})
}
