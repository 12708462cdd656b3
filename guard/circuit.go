package guard

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// Shared circuits in the recovery state machine (doc.go's table;
// circuit/doc.go, "How the guard calls it"). Every classified transient or
// hard failure reports Fail on its key. A held prompt about to dispatch —
// its wait ended, or the agent accepted a model switch — asks Acquire
// first: Go dispatches (due, switched), Probe dispatches as the circuit's
// one probe (probing: its lease refreshed while the turn runs; leaving
// probing settles the lease as the table's row says), Park holds the
// prompt (parked) and asks again when the circuit says. Parking never
// fails a prompt by itself: only a cooldown's wait spends the prompt's
// parking budget (what its own retry schedule would still have waited),
// and circuit_open stops it only when the circuit is open and the
// cooldown ends beyond that budget. New prompts are never blocked. Store
// calls run on the circuit store's worker (worker.go); their results come back fenced by the
// prompt's epoch. A store failure means "as if no circuit" (the circuit
// package logs the outage once; the guard logs each failed call at debug).

// ReasonCircuitOpen: the circuit's cooldown ends beyond what the prompt
// may still wait, or every fallback model left is cooling down.
const ReasonCircuitOpen = "circuit_open"

// probeWindow: a fallback model whose circuit a transient failure opened
// and whose cooldown ends within this is tried anyway (a cooldown
// probe): the prompt parks on its circuit for up to this long, and takes
// its probe lease like any retry.
const probeWindow = 5 * time.Second

// minPark bounds how soon a parked prompt asks again, whatever the store
// says.
const minPark = 100 * time.Millisecond

// budgetSlack is how far a cooldown may end past a prompt's parking budget
// and still be waited for: the policy's delays are whole seconds, so a
// cooldown within a second of the schedule's end is within its resolution
// (and the circuit's schedule runs a little behind a session's own by the
// probes' durations).
const budgetSlack = time.Second

// maxAttempts bounds the fallback summary of one prompt.
const maxAttempts = 64

// promptCircuit is a prompt's part in the circuits and its attempts. Where
// the prompt stands (parked, probing) is its state; this is the data.
type promptCircuit struct {
	key      circuit.Key       // the circuit the prompt last asked: parked on, or probing
	budget   time.Duration     // parked: how much longer cooldowns may hold the prompt
	circuit  *circuit.Snapshot // the circuit as last seen, for a circuit_open answer
	attempts []Attempt
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
// NewCircuitHolder names a new guard of this process to the circuits:
// host/pid and the guard's number in the process, unique across processes
// and machines sharing a store. Config.CircuitHolder takes it (the
// recording keeps it, so a replay names its sessions the same).
func NewCircuitHolder() string { return fmt.Sprintf("%s/%d", holderBase, guards.Add(1)) }

func (g *Guard) holder(p *prompt) string {
	base := g.processID()
	s := fmt.Sprintf("%s/%s/%s", base, p.session, p.client.ID)
	if len(s) > 200 || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		sum := sha256.Sum256([]byte(s)) // long or unprintable session or request ids: still unique
		s = fmt.Sprintf("%s/%x", base, sum[:16])
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

// circuitFailure is f as its circuit needs it: the validated provider
// hint, and the session's own next policy delay (at least one second),
// which sets the circuit's first step when f opens it. until is the
// cooldown the fallback summary reports (the hint, else now + that
// delay). ok is false for classes that do not touch circuits.
func (g *Guard) circuitFailure(p *prompt, f *failure, d policy.Decision, now time.Time) (cf circuit.Failure, until time.Time, ok bool) {
	class := f.verdict.Class
	if class != classify.ClassTransient && class != classify.ClassHard {
		return circuit.Failure{}, time.Time{}, false
	}
	var hint time.Time
	if r := f.verdict.ResetAt; r != nil && r.After(now) {
		hint = *r
	}
	if ra := f.verdict.RetryAfter; ra != nil && *ra > 0 && now.Add(*ra).After(hint) {
		hint = now.Add(*ra)
	}
	delay := d.Delay
	if d.Action != policy.ActionRetry && d.Action != policy.ActionWait {
		cp, key := g.policyFor(f.verdict)
		delay = policy.RetryDelay(cp.Retry.InitialIntervalSeconds, p.route.Retries[key])
	}
	delay = max(delay, circuit.MinCooldown)
	until = hint
	if until.IsZero() {
		until = now.Add(delay)
	}
	return circuit.Failure{Class: string(class), Code: f.verdict.Code, CooldownUntil: hint, Backoff: delay}, until, true
}

// opensCircuits reports whether f's class touches circuits.
func opensCircuits(f *failure) bool {
	return f != nil && (f.verdict.Class == classify.ClassTransient || f.verdict.Class == classify.ClassHard)
}

// circuitFailed records a failed attempt in p's summary and reports a
// transient or hard one to its circuit (Fail with p's holder: a failed
// probe hands its lease on). Called before the failure's transition.
func (g *Guard) circuitFailed(c transport.Ctl, p *prompt, f *failure, d policy.Decision) {
	now := c.Now()
	cf, until, opens := g.circuitFailure(p, f, d, now)
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
	if !g.circuitsOn() || !opens {
		return
	}
	key, h, cc := g.circuitKey(a.Model, f.verdict.Scope), g.holder(p), g.cfg.Circuits
	g.circOps.do(c, func() func() {
		snap, err := cc.Fail(context.Background(), key, cf, h, now)
		if err != nil {
			g.log.Debug("circuit fail", "key", key.String(), "err", err)
			return nil
		}
		return g.circuitReported(c, p, "fail", snap)
	})
}

// dispatchDue dispatches a held prompt whose moment came (its wait ended,
// or the agent accepted a model switch): at once without a circuit, else
// after asking the circuit of its latest failure on the model it now
// runs.
func (g *Guard) dispatchDue(c transport.Ctl, p *prompt) {
	if !g.circuitsOn() || !opensCircuits(p.last) {
		g.transit(c, p, step{on: goEvent(p)}, func() { g.dispatchRetry(c, p) })
		return
	}
	key := g.circuitKey(g.modelOf(p), p.last.verdict.Scope)
	h, epoch, now, cc := g.holder(p), p.epoch, c.Now(), g.cfg.Circuits
	g.circOps.do(c, func() func() {
		d, err := cc.Acquire(context.Background(), key, h, now)
		if err != nil {
			g.log.Debug("circuit acquire", "key", key.String(), "err", err)
		}
		return func() { g.acquired(c, p, epoch, key, d) }
	})
}

// goEvent is the event that dispatches p from its held state.
func goEvent(p *prompt) event {
	if p.state == stSwitching {
		return onSwitched
	}
	return onDue
}

// acquired follows the circuit's answer for a prompt about to dispatch.
func (g *Guard) acquired(c transport.Ctl, p *prompt, epoch uint64, key circuit.Key, d circuit.Decision) {
	if p.epoch != epoch || g.closed || !c.Pending(p.client) || !g.tracker.Current(p.turn) {
		if d.Action == circuit.Probe {
			g.release(c, key, g.holder(p)) // nobody runs this probe
		}
		if p.epoch == epoch && !g.closed {
			g.due(c, p, epoch) // the prompt ended meanwhile: due answers it
		}
		return
	}
	p.circ.key = key
	switch d.Action {
	case circuit.Park:
		g.park(c, p, d)
	case circuit.Probe:
		g.circuitDecided(c, p, CircuitProbe, key, d.Until, d.Circuit)
		g.transit(c, p, step{on: onProbe}, func() {
			g.dispatchRetry(c, p)
			g.armRefresh(c, p)
		})
	default:
		g.circuitDecided(c, p, CircuitGo, key, d.Until, d.Circuit)
		g.transit(c, p, step{on: goEvent(p)}, func() { g.dispatchRetry(c, p) })
	}
}

// park holds p until the circuit says to ask again. Only a cooldown's
// wait spends p's parking budget (set when p starts parking): a wait
// behind another session's probe, or in the release jitter after a
// success, costs nothing. p stops with circuit_open only when the circuit
// is cooling down and its cooldown ends beyond the budget.
func (g *Guard) park(c transport.Ctl, p *prompt, d circuit.Decision) {
	now := c.Now()
	if p.state != stParked {
		p.circ.budget = g.parkBudget(p)
	}
	snap := d.Circuit
	p.circ.circuit = &snap
	if d.Wait == circuit.WaitCooldown && snap.CooldownUntil != nil {
		wait := max(snap.CooldownUntil.Sub(now), 0)
		if wait > p.circ.budget+budgetSlack {
			g.circuitDecided(c, p, CircuitOpen, p.circ.key, *snap.CooldownUntil, snap)
			g.stopWith(c, p, onCircuitOpen, ReasonCircuitOpen, false)
			return
		}
		p.circ.budget = max(p.circ.budget-min(wait, max(d.Until.Sub(now), 0)), 0)
	}
	delay := max(d.Until.Sub(now), minPark)
	g.circuitDecided(c, p, CircuitPark, p.circ.key, now.Add(delay), snap)
	p.hold.next = now.Add(delay)
	g.transit(c, p, step{on: onPark}, func() {
		epoch := p.epoch
		p.stop = c.After(delay, func() { g.due(c, p, epoch) })
	})
}

// parkBudget is how long cooldowns may hold p from its first park on: the
// delays its own retry schedule has left (it keeps every retry while
// parked), and for a model it just switched to at least probeWindow.
func (g *Guard) parkBudget(p *prompt) time.Duration {
	b := g.remainingSchedule(p)
	if p.state == stSwitching {
		b = max(b, probeWindow)
	}
	return b
}

// remainingSchedule is how long p's own retry schedule would still have
// waited: the delays of the retries its class has left, the due retry's
// counted whole (its full-jitter draw may have been shorter than the
// circuit's least cooldown).
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

// armRefresh keeps a running probe's lease alive; leaving probing stops
// the timer (every transition does).
func (g *Guard) armRefresh(c transport.Ctl, p *prompt) {
	epoch, key, h, cc := p.epoch, p.circ.key, g.holder(p), g.cfg.Circuits
	p.stop = c.After(cc.RefreshEvery(), func() {
		if p.epoch != epoch || g.closed {
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

// probeProgress moves every probe whose turn shows provider progress (an
// assistant or thought chunk, a tool call) on to retrying, which closes
// its circuit. Called after a session/update while probes run.
func (g *Guard) probeProgress(c transport.Ctl) {
	for _, p := range g.prompts {
		if p.state != stProbing {
			continue
		}
		e := p.turn.Evidence
		if e.AssistantOutput || e.Thoughts || e.ToolActivity || e.ToolUpdates > 0 {
			g.transit(c, p, step{on: onProgress}, nil)
		}
	}
}

// settleLease does what a transition out of probing does with the probe
// lease (the table's lease column): Progress closes the circuit; a failure
// reported to the circuit by circuitFailed handed the lease on already
// (Fail with this holder on this key), anything else releases it.
func (g *Guard) settleLease(c transport.Ctl, p *prompt, l leaseEffect, s step) {
	if !g.circuitsOn() {
		return // only a test puts a prompt in probing without circuits
	}
	key, h := p.circ.key, g.holder(p)
	switch l {
	case leaseClose:
		now, cc := c.Now(), g.cfg.Circuits
		g.circOps.do(c, func() func() {
			snap, err := cc.Progress(context.Background(), key, now)
			if err != nil {
				g.log.Debug("circuit progress", "key", key.String(), "err", err)
				return nil
			}
			return g.circuitReported(c, p, "progress", snap)
		})
	case leaseReported:
		if opensCircuits(s.f) && g.circuitKey(g.modelOf(p), s.f.verdict.Scope) == key {
			return
		}
		g.release(c, key, h)
	case leaseReleased:
		g.release(c, key, h)
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

// circuitDecided emits CircuitDecision.
func (g *Guard) circuitDecided(c transport.Ctl, p *prompt, decision string, key circuit.Key, until time.Time, snap circuit.Snapshot) {
	if g.on() {
		g.emit(CircuitDecision{EventBase: g.base(c, p), Decision: decision, Key: key.String(), Model: g.modelOf(p), Until: until, Circuit: snap})
	}
}

// circuitReported is what runs on the event loop once a report to a
// circuit (Fail, Progress) returned: CircuitChanged, when someone listens.
func (g *Guard) circuitReported(c transport.Ctl, p *prompt, op string, snap circuit.Snapshot) func() {
	if !g.on() {
		return nil
	}
	return func() { g.emit(CircuitChanged{EventBase: g.base(c, p), Op: op, Circuit: snap}) }
}
