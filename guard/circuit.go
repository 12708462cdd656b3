package guard

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// Shared circuits in the recovery state machine (circuit/doc.go, "How the
// guard calls it"). Every classified transient or hard failure reports
// Fail on its key; at a wait's deadline a recovering prompt asks Acquire
// before it re-dispatches: Go dispatches, Probe dispatches as the
// circuit's one probe (its lease refreshed while the turn runs, Progress on
// its first provider progress or its success, Release when it ends without
// an outcome), Park keeps the prompt in its waiting state (the park
// transition) until it may go, or until its own schedule would have ended
// (circuit_open). New prompts are never blocked. Store calls run on
// circuitOps' worker; their results come back fenced by the prompt's
// epoch. A store failure means "as if no circuit" (the circuit package
// logs the outage once; the guard logs each failed call at debug).

// ReasonCircuitOpen: the prompt stayed parked behind an open circuit until
// its own schedule ran out, or every fallback model left is cooling down.
const ReasonCircuitOpen = "circuit_open"

// probeWindow: a fallback model whose circuit a transient failure opened
// and whose cooldown ends within this is tried anyway (spec 002's cooldown
// probe).
const probeWindow = 5 * time.Second

// minPark bounds how soon a parked prompt asks again, whatever the store
// says.
const minPark = 100 * time.Millisecond

// maxAttempts bounds the fallback summary of one prompt.
const maxAttempts = 64

// promptCircuit is a prompt's part in the circuits and its attempts.
type promptCircuit struct {
	key        circuit.Key
	keyed      bool      // key is the latest transient/hard failure's
	probe      bool      // the prompt holds key's probe lease
	progressed bool      // Progress was reported for the probe
	parkEnd    time.Time // the end of the prompt's own schedule, fixed at its first park
	circuit    *circuit.Snapshot
	attempts   []Attempt
}

// Attempt is one failed attempt of a prompt, as the fallback summary
// (ProviderError.attempts) lists it.
type Attempt struct {
	Model         string  `json:"model"`
	Code          string  `json:"code"`
	Class         string  `json:"class"`
	DurationMs    int64   `json:"durationMs"`
	CooldownUntil *string `json:"cooldownUntil"`
}

func (g *Guard) circuitsOn() bool { return g.cfg.Circuits != nil && g.cfg.Circuits.Enabled() }

// holderBase is host/pid, the part of a lease holder id that names this
// process across machines.
var holderBase = func() string {
	h, _ := os.Hostname()
	if len(h) > 64 {
		h = h[:64]
	}
	return fmt.Sprintf("%s/%d", h, os.Getpid())
}()

// guards numbers the Guards of the process, so that two of them never
// share a lease holder id.
var guards atomic.Uint64

// holder names p's turn uniquely across processes and machines:
// host/pid/guard/session/request.
func (g *Guard) holder(p *prompt) string {
	if g.circID == 0 {
		g.circID = guards.Add(1)
	}
	s := fmt.Sprintf("%s/%d/%s/%s", holderBase, g.circID, p.session, p.client.ID)
	if len(s) > 200 || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		sum := sha256.Sum256([]byte(s)) // long or unprintable session or request ids: still unique
		s = fmt.Sprintf("%s/%x", holderBase, sum[:16])
	}
	return s
}

// circuitKey is the key of the circuit of model (when known) and a
// verdict's scope, normalized (an invalid key is refused by every circuit
// operation, which then answers as without circuits).
func (g *Guard) circuitKey(model, scope string) circuit.Key {
	k := circuit.Key{Namespace: g.cfg.CircuitNamespace, Provider: g.adapter, Model: model, Scope: scope}
	if n, err := k.Normalize(); err == nil {
		return n
	}
	return k
}

// modelOf is the model p's current attempt runs on, "" when unknown.
func (g *Guard) modelOf(p *prompt) string {
	if p.model != "" {
		return p.model
	}
	if s := g.sessions[p.session]; s != nil {
		return s.currentModel
	}
	return ""
}

// cooldownUntil is how long a failure keeps its circuit open: the
// validated provider hint, else the session's next policy delay (at least
// one second). ok is false for classes that do not touch circuits.
func (g *Guard) cooldownUntil(p *prompt, f *failure, d policy.Decision, now time.Time) (time.Time, bool) {
	class := f.verdict.Class
	if class != classify.ClassTransient && class != classify.ClassHard {
		return time.Time{}, false
	}
	var until time.Time
	if r := f.verdict.ResetAt; r != nil && r.After(now) {
		until = *r
	}
	if ra := f.verdict.RetryAfter; ra != nil && *ra > 0 && now.Add(*ra).After(until) {
		until = now.Add(*ra)
	}
	if !until.IsZero() {
		return until, true
	}
	delay := d.Delay
	if d.Action != policy.ActionRetry && d.Action != policy.ActionWait {
		cp, key := g.policyFor(f.verdict)
		delay = policy.RetryDelay(cp.Retry.InitialIntervalSeconds, p.route.Retries[key])
	}
	return now.Add(max(delay, time.Second)), true
}

// circuitFailed records a failed attempt in p's summary and reports it to
// its circuit: Fail for a transient or hard failure (a failed probe hands
// its lease on), Release of a probe lease for any other.
func (g *Guard) circuitFailed(c transport.Ctl, p *prompt, f *failure, d policy.Decision) {
	now := c.Now()
	until, opens := g.cooldownUntil(p, f, d, now)
	a := Attempt{Model: g.modelOf(p), Code: f.verdict.Code, Class: string(f.verdict.Class)}
	if f.turn != nil && !f.turn.Started.IsZero() {
		a.DurationMs = max(now.Sub(f.turn.Started).Milliseconds(), 0)
	}
	if opens {
		s := until.UTC().Format("2006-01-02T15:04:05.000Z")
		a.CooldownUntil = &s
	}
	if len(p.circ.attempts) < maxAttempts {
		p.circ.attempts = append(p.circ.attempts, a)
	}
	if !g.circuitsOn() {
		return
	}
	probe := p.circ.probe
	g.endProbe(p)
	if !opens {
		if probe {
			g.release(c, p.circ.key, g.holder(p))
		}
		p.circ.keyed = false
		return
	}
	key := g.circuitKey(a.Model, f.verdict.Scope)
	p.circ.key, p.circ.keyed = key, true
	cf, h, cc := circuit.Failure{Class: a.Class, Code: a.Code, CooldownUntil: until}, g.holder(p), g.cfg.Circuits
	g.circOps.do(c, func() func() {
		if _, err := cc.Fail(context.Background(), key, cf, h, now); err != nil {
			g.log.Debug("circuit fail", "key", key.String(), "err", err)
		}
		return nil
	})
}

// dispatchDue dispatches a prompt whose wait ended: at once without a
// circuit, else after asking the circuit of its latest failure.
func (g *Guard) dispatchDue(c transport.Ctl, p *prompt) {
	if !g.circuitsOn() || !p.circ.keyed {
		g.transit(c, p, step{on: onDue}, func() { g.dispatchRetry(c, p) })
		return
	}
	key, h, epoch, now, cc := p.circ.key, g.holder(p), p.epoch, c.Now(), g.cfg.Circuits
	g.circOps.do(c, func() func() {
		d, err := cc.Acquire(context.Background(), key, h, now)
		if err != nil {
			g.log.Debug("circuit acquire", "key", key.String(), "err", err)
		}
		return func() { g.acquired(c, p, epoch, d) }
	})
}

// acquired follows the circuit's answer for a prompt whose wait ended.
func (g *Guard) acquired(c transport.Ctl, p *prompt, epoch uint64, d circuit.Decision) {
	if p.epoch != epoch || g.closed || !c.Pending(p.client) || !g.tracker.Current(p.turn) {
		if d.Action == circuit.Probe {
			g.release(c, p.circ.key, g.holder(p)) // nobody runs this probe
		}
		if p.epoch == epoch && !g.closed {
			g.due(c, p, epoch) // the prompt ended meanwhile: due answers it
		}
		return
	}
	switch d.Action {
	case circuit.Park:
		g.park(c, p, d)
	case circuit.Probe:
		p.circ.probe, p.circ.progressed = true, false
		g.probes++
		g.transit(c, p, step{on: onDue}, func() {
			g.dispatchRetry(c, p)
			g.armRefresh(c, p)
		})
	default:
		g.transit(c, p, step{on: onDue}, func() { g.dispatchRetry(c, p) })
	}
}

// park keeps p waiting behind an open circuit until the circuit says to
// ask again, never past the end of p's own schedule; at that end, p stops
// with circuit_open.
func (g *Guard) park(c transport.Ctl, p *prompt, d circuit.Decision) {
	now := c.Now()
	if p.circ.parkEnd.IsZero() {
		p.circ.parkEnd = now.Add(g.remainingSchedule(p))
	}
	snap := d.Circuit
	p.circ.circuit = &snap
	if !now.Before(p.circ.parkEnd) {
		g.stopWith(c, p, onCircuitOpen, ReasonCircuitOpen, false)
		return
	}
	until := d.Until
	if until.After(p.circ.parkEnd) {
		until = p.circ.parkEnd
	}
	g.transit(c, p, step{on: onPark}, func() {
		epoch := p.epoch
		p.stop = c.After(max(until.Sub(c.Now()), minPark), func() { g.due(c, p, epoch) })
	})
}

// remainingSchedule is how long p's own retry schedule would still have
// run: the delays of the retries its class has left, the due retry's
// counted whole (its full-jitter draw may have been shorter than the
// circuit's one-second least cooldown).
func (g *Guard) remainingSchedule(p *prompt) time.Duration {
	if p.last == nil {
		return 0
	}
	cp, key := g.policyFor(p.last.verdict)
	var sum time.Duration
	if cp.Retry.Enabled {
		first := p.route.Retries[key]
		if p.state == stRetryWait && first > 0 {
			first--
		}
		for k := first; k < cp.Retry.MaxRetries; k++ {
			sum += policy.RetryDelay(cp.Retry.InitialIntervalSeconds, k)
		}
	}
	return min(sum, policy.MaxDelay)
}

// armRefresh keeps a running probe's lease alive.
func (g *Guard) armRefresh(c transport.Ctl, p *prompt) {
	epoch, key, h, cc := p.epoch, p.circ.key, g.holder(p), g.cfg.Circuits
	p.stop = c.After(cc.RefreshEvery(), func() {
		if p.epoch != epoch || !p.circ.probe || g.closed {
			return
		}
		now := c.Now()
		g.circOps.do(c, func() func() {
			if _, err := cc.Refresh(context.Background(), key, h, now); err != nil {
				g.log.Debug("circuit refresh", "key", key.String(), "err", err)
			}
			return nil
		})
		g.armRefresh(c, p)
	})
}

// probeProgress reports Progress for every running probe whose turn shows
// provider progress (an assistant or thought chunk, a tool call). Called
// after a session/update while probes run.
func (g *Guard) probeProgress(c transport.Ctl) {
	for _, p := range g.prompts {
		if !p.circ.probe || p.circ.progressed || p.state != stRetrying {
			continue
		}
		e := p.turn.Evidence
		if e.AssistantOutput || e.Thoughts || e.ToolActivity || e.ToolUpdates > 0 {
			g.progress(c, p)
		}
	}
}

func (g *Guard) progress(c transport.Ctl, p *prompt) {
	p.circ.progressed = true
	key, now, cc := p.circ.key, c.Now(), g.cfg.Circuits
	g.circOps.do(c, func() func() {
		if _, err := cc.Progress(context.Background(), key, now); err != nil {
			g.log.Debug("circuit progress", "key", key.String(), "err", err)
		}
		return nil
	})
}

// circuitAnswered settles p's probe when p is answered: its success closes
// the circuit; an answer without an outcome releases the lease.
func (g *Guard) circuitAnswered(c transport.Ctl, p *prompt, rep TurnReport) {
	if !p.circ.probe {
		return
	}
	switch {
	case p.circ.progressed:
	case rep.Outcome == OutcomeRetried && rep.StopReason != string(acp.StopReasonCancelled):
		g.progress(c, p) // a successful return; a cancelled one proves nothing
	default:
		g.release(c, p.circ.key, g.holder(p))
	}
	g.endProbe(p)
}

func (g *Guard) endProbe(p *prompt) {
	if p.circ.probe {
		p.circ.probe = false
		g.probes--
	}
}

func (g *Guard) release(c transport.Ctl, key circuit.Key, h string) {
	now, cc := c.Now(), g.cfg.Circuits
	g.circOps.do(c, func() func() {
		if err := cc.Release(context.Background(), key, h, now); err != nil {
			g.log.Debug("circuit release", "key", key.String(), "err", err)
		}
		return nil
	})
}
