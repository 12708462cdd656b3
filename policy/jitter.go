package policy

import (
	"math/rand/v2"
	"time"
)

// NewJitter returns a full-jitter source seeded with seed: the same seed
// draws the same delays in the same order, so a replay (or a test) with
// the live run's seed makes the live run's decisions. It is not safe for
// concurrent use (the guard draws under the relay's lock).
func NewJitter(seed uint64) Jitter {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(d time.Duration) time.Duration {
		if d <= 0 {
			return 0
		}
		ms := d.Milliseconds()
		return min(time.Duration(r.Int64N(ms+1))*time.Millisecond, d)
	}
}

// RandomSeed returns a seed for NewJitter from the process's random
// source: never 0 (0 means "no jitter" where a seed is configured), and
// below 2⁵³ so that it survives any JSON reader of a recorded transcript.
func RandomSeed() uint64 {
	for {
		if s := rand.Uint64() >> 11; s != 0 {
			return s
		}
	}
}
