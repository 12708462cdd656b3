package guard

import (
	evt "github.com/acp-guard/acp-guard/event"

	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/acp-guard/acp-guard/circuit"
	"github.com/acp-guard/acp-guard/classify"
	"github.com/acp-guard/acp-guard/observers"
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
// calls run on the circuit store's worker (worker.go); a result that acts on
// a prompt comes back armed under its fence (fence.go). A store failure means "as if no circuit" (the circuit
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

// circuitClient is the guard's side of the shared circuits: it reports
// failures, asks before a held prompt dispatches, parks and probes, and
// settles the probe lease as the table says (machine.transit calls
// settleLease). Store calls run on its worker; a result that acts on a
// prompt is armed under the prompt's fence (fence.go).
type circuitClient struct {
	cc      *circuit.Circuits // nil: off
	ns      string            // Config.CircuitNamespace
	name    string            // Config.CircuitHolder, else NewCircuitHolder's on first use
	w       worker            // the circuit store's calls
	m       *machine
	rc      *recovery
	ag      *agent
	ev      *emitter
	doc     policy.Document
	tracker *observers.Tracker
	log     *slog.Logger
	warmed  bool // warm ran
}

// promptCircuit is a prompt's part in the circuits and its attempts. Where
// the prompt stands (parked, probing) is its state; this is the data.
type promptCircuit struct {
	key      circuit.Key       // the circuit the prompt last asked: parked on, or probing
	budget   time.Duration     // parked: how much longer cooldowns may hold the prompt
	circuit  *circuit.Snapshot // the circuit as last seen, for a circuit_open answer
	attempts []Attempt
	// retriedNow is the circuit of the failure a retry_now re-sent the
	// prompt over (zero: none): that retry went without asking the
	// circuit, so it holds no probe lease, but its success is the
	// provider's answer all the same (retriedNowEnded).
	retriedNow circuit.Key
}

// Attempt is one failed attempt of a prompt, as the fallback summary
// (ProviderError.attempts) lists it.
type Attempt = evt.FailedAttempt

func (cl *circuitClient) on() bool { return cl.cc != nil && cl.cc.Enabled() }

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

// NewCircuitHolder names a new guard of this process to the circuits:
// host/pid and the guard's number in the process, unique across processes
// and machines sharing a store. Config.CircuitHolder takes it (the
// recording keeps it, so a replay names its sessions the same).
func NewCircuitHolder() string { return fmt.Sprintf("%s/%d", holderBase, guards.Add(1)) }

// processID names this guard across processes and machines
// (host/pid/guard), the prefix of its lease holders and board entries.
func (cl *circuitClient) processID() string {
	if cl.name == "" {
		cl.name = NewCircuitHolder()
	}
	return cl.name
}

// holder names p's turn uniquely across processes and machines:
// host/pid/guard/session/request.
func (cl *circuitClient) holder(p *prompt) string {
	base := cl.processID()
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
func (cl *circuitClient) key(model, scope string) circuit.Key {
	k := circuit.Key{Namespace: cl.ns, Provider: cl.ag.adapter, Model: model, Scope: scope}
	if n, err := k.Normalize(); err == nil {
		return n
	}
	return k
}

// circuitFailure is f as its circuit needs it: the validated provider
// hint, and the session's own next policy delay (at least one second),
// which sets the circuit's first step when f opens it. until is the
// cooldown the fallback summary reports (the hint, else now + that
// delay). ok is false for classes that do not touch circuits.
func (cl *circuitClient) failure(p *prompt, f *failure, d policy.Decision, now time.Time) (cf circuit.Failure, until time.Time, ok bool) {
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
		cp, key := policyFor(cl.doc, f.verdict)
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

// failed records a failed attempt in p's summary and reports a
// transient or hard one to its circuit (Fail with p's holder: a failed
// probe hands its lease on). Called before the failure's transition.
func (cl *circuitClient) failed(c transport.Ctl, p *prompt, f *failure, d policy.Decision) {
	now := c.Now()
	cf, until, opens := cl.failure(p, f, d, now)
	a := Attempt{Model: cl.ag.modelOf(p), Code: f.verdict.Code, Class: string(f.verdict.Class)}
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
	if !cl.on() || !opens {
		return
	}
	key, h, cc := cl.key(a.Model, f.verdict.Scope), cl.holder(p), cl.cc
	cl.w.do(c, func() func() {
		snap, err := cc.Fail(context.Background(), key, cf, h, now)
		if err != nil {
			cl.log.Debug("circuit fail", "key", key.String(), "err", err)
			return nil
		}
		return cl.reported(c, p, "fail", snap)
	})
}

// warmScope is the scope of the circuit warm reads: a provider-wide
// outage's, the one many sessions share.
const warmScope = "provider"

// warm reads, once per guard at its first session, the circuit of the
// session's provider-wide failures on model (its current one): the
// store's bucket (a NATS bucket's lookup) is bound then rather than by
// the first prompt's failure report, and the process has a view of that
// circuit to decide on should the store not answer when a prompt needs
// it. Off the event loop like every store call; nothing waits for it.
func (cl *circuitClient) warm(c transport.Ctl, model string) {
	if !cl.on() || cl.warmed {
		return
	}
	cl.warmed = true
	key, now, cc := cl.key(model, warmScope), c.Now(), cl.cc
	cl.w.do(c, func() func() {
		if _, _, err := cc.Get(context.Background(), key, now); err != nil {
			cl.log.Debug("circuit warm read", "key", key.String(), "err", err)
		}
		return nil
	})
}

// dispatchDue dispatches a held prompt whose moment came (its wait ended,
// or the agent accepted a model switch): at once without a circuit, else
// after asking the circuit of its latest failure on the model it now
// runs.
func (cl *circuitClient) dispatchDue(c transport.Ctl, p *prompt) {
	if !cl.on() || !opensCircuits(p.last) {
		cl.m.transit(c, p, step{on: goEvent(p)}, func() { cl.rc.dispatchRetry(c, p) })
		return
	}
	key := cl.key(cl.ag.modelOf(p), p.last.verdict.Scope)
	h, f, now, cc := cl.holder(p), cl.m.fence(p), c.Now(), cl.cc
	cl.w.do(c, func() func() {
		d, err := cc.Acquire(context.Background(), key, h, now)
		if err != nil {
			cl.log.Debug("circuit acquire", "key", key.String(), "err", err)
		}
		return f.orElse(func() { cl.acquired(c, p, key, d) }, func() {
			if d.Action == circuit.Probe {
				cl.release(c, key, h) // nobody runs this probe
			}
		})
	})
}

// goEvent is the event that dispatches p from its held state.
func goEvent(p *prompt) event {
	if p.state == stSwitching {
		return onSwitched
	}
	return onDue
}

// acquired follows the circuit's answer for a prompt about to dispatch
// (under its fence: the prompt is still where it asked from).
func (cl *circuitClient) acquired(c transport.Ctl, p *prompt, key circuit.Key, d circuit.Decision) {
	if !c.Pending(p.client) || !cl.tracker.Current(p.turn) {
		if d.Action == circuit.Probe {
			cl.release(c, key, cl.holder(p)) // nobody runs this probe
		}
		cl.rc.dispatchable(c, p, p.turn) // false: the prompt ended meanwhile, and this answers it
		return
	}
	p.circ.key = key
	switch d.Action {
	case circuit.Park:
		cl.park(c, p, d)
	case circuit.Probe:
		cl.decided(c, p, CircuitProbe, key, d.Until, d.Circuit)
		cl.m.transit(c, p, step{on: onProbe}, func() {
			cl.rc.dispatchRetry(c, p)
			cl.armRefresh(c, p)
		})
	default:
		cl.decided(c, p, CircuitGo, key, d.Until, d.Circuit)
		cl.m.transit(c, p, step{on: goEvent(p)}, func() { cl.rc.dispatchRetry(c, p) })
	}
}

// park holds p until the circuit says to ask again. Only a cooldown's
// wait spends p's parking budget (set when p starts parking): a wait
// behind another session's probe, or in the release jitter after a
// success, costs nothing. p stops with circuit_open only when the circuit
// is cooling down and its cooldown ends beyond the budget.
func (cl *circuitClient) park(c transport.Ctl, p *prompt, d circuit.Decision) {
	now := c.Now()
	if p.state != stParked {
		p.circ.budget = cl.parkBudget(p)
	}
	snap := d.Circuit
	p.circ.circuit = &snap
	if d.Wait == circuit.WaitCooldown && snap.CooldownUntil != nil {
		wait := max(snap.CooldownUntil.Sub(now), 0)
		if wait > p.circ.budget+budgetSlack {
			cl.decided(c, p, CircuitOpen, p.circ.key, *snap.CooldownUntil, snap)
			cl.rc.stopWith(c, p, onCircuitOpen, ReasonCircuitOpen, false)
			return
		}
		p.circ.budget = max(p.circ.budget-min(wait, max(d.Until.Sub(now), 0)), 0)
	}
	delay := max(d.Until.Sub(now), minPark)
	cl.decided(c, p, CircuitPark, p.circ.key, now.Add(delay), snap)
	p.hold.next = now.Add(delay)
	cl.m.transit(c, p, step{on: onPark}, func() { cl.rc.armDue(c, p, delay) })
}

// parkBudget is how long cooldowns may hold p from its first park on: the
// delays its own retry schedule has left (it keeps every retry while
// parked), and for a model it just switched to at least probeWindow.
func (cl *circuitClient) parkBudget(p *prompt) time.Duration {
	b := cl.remainingSchedule(p)
	if p.state == stSwitching {
		b = max(b, probeWindow)
	}
	return b
}

// remainingSchedule is how long p's own retry schedule would still have
// waited: the delays of the retries its class has left, the due retry's
// counted whole (its full-jitter draw may have been shorter than the
// circuit's least cooldown).
func (cl *circuitClient) remainingSchedule(p *prompt) time.Duration {
	if p.last == nil {
		return 0
	}
	cp, key := policyFor(cl.doc, p.last.verdict)
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

// armRefresh keeps a running probe's lease alive, under the probing
// state's fence; leaving probing stops the timer (every transition does).
func (cl *circuitClient) armRefresh(c transport.Ctl, p *prompt) {
	key, h, cc := p.circ.key, cl.holder(p), cl.cc
	p.stop = c.After(cc.RefreshEvery(), cl.m.fence(p).then(func() {
		now := c.Now()
		cl.w.do(c, func() func() {
			if _, err := cc.Refresh(context.Background(), key, h, now); err != nil {
				cl.log.Debug("circuit refresh", "key", key.String(), "err", err)
			}
			return nil
		})
		cl.armRefresh(c, p)
	}))
}

// probeProgress moves every probe whose turn shows provider progress (an
// assistant or thought chunk, a tool call) on to retrying, which closes
// its circuit. Called after a session/update while probes run.
func (cl *circuitClient) progress(c transport.Ctl) {
	for _, p := range cl.m.prompts {
		if p.state != stProbing {
			continue
		}
		e := p.turn.Evidence
		if e.AssistantOutput || e.Thoughts || e.ToolActivity || e.ToolUpdates > 0 {
			cl.m.transit(c, p, step{on: onProgress}, nil)
		}
	}
}

// settleLease does what a transition out of probing does with the probe
// lease (the table's lease column): Progress closes the circuit; a failure
// reported to the circuit by failed handed the lease on already
// (Fail with this holder on this key), anything else releases it.
func (cl *circuitClient) settleLease(c transport.Ctl, p *prompt, l leaseEffect, s step) {
	if !cl.on() {
		return // only a test puts a prompt in probing without circuits
	}
	key, h := p.circ.key, cl.holder(p)
	switch l {
	case leaseClose:
		cl.reportProgress(c, p, key)
	case leaseReported:
		if opensCircuits(s.f) && cl.key(cl.ag.modelOf(p), s.f.verdict.Scope) == key {
			return
		}
		cl.release(c, key, h)
	case leaseReleased:
		cl.release(c, key, h)
	}
}

// retryNow notes the circuit a retry_now's retry runs against: that of
// p's latest failure, on the model the retry runs on, when the failure
// is one that opens circuits.
func (cl *circuitClient) retryNow(p *prompt) {
	p.circ.retriedNow = circuit.Key{}
	if cl.on() && opensCircuits(p.last) {
		p.circ.retriedNow = cl.key(cl.ag.modelOf(p), p.last.verdict.Scope)
	}
}

// retriedNowEnded settles a retry_now's retry as it leaves retrying: a
// success closes the circuit (Progress, as a probe's success does:
// parked sessions are released instead of waiting out the cooldown);
// any other end leaves the circuit to the failure's own report.
func (cl *circuitClient) retriedNowEnded(c transport.Ctl, p *prompt, on event) {
	key := p.circ.retriedNow
	p.circ.retriedNow = circuit.Key{}
	if on != onSucceed || key == (circuit.Key{}) || !cl.on() {
		return
	}
	cl.reportProgress(c, p, key)
}

func (cl *circuitClient) release(c transport.Ctl, key circuit.Key, h string) {
	now, cc := c.Now(), cl.cc
	cl.w.do(c, func() func() {
		if err := cc.Release(context.Background(), key, h, now); err != nil {
			cl.log.Debug("circuit release", "key", key.String(), "err", err)
		}
		return nil
	})
}

// circuitDecided emits CircuitDecision.
func (cl *circuitClient) decided(c transport.Ctl, p *prompt, decision string, key circuit.Key, until time.Time, snap circuit.Snapshot) {
	if cl.ev.on() {
		cl.ev.emit(CircuitDecision{EventBase: cl.ev.base(c, p), Decision: decision, Key: key.String(), Model: cl.ag.modelOf(p), Until: until, Circuit: snap})
	}
}

// circuitReported is what runs on the event loop once a report to a
// circuit (Fail, Progress) returned: CircuitChanged, when someone listens.
func (cl *circuitClient) reported(c transport.Ctl, p *prompt, op string, snap circuit.Snapshot) func() {
	if !cl.ev.on() {
		return nil
	}
	return func() { cl.ev.emit(CircuitChanged{EventBase: cl.ev.base(c, p), Op: op, Circuit: snap}) }
}

// reportProgress reports p's success on key to the store (Progress: a probe's
// success, or a retried-now prompt's, closes the circuit).
func (cl *circuitClient) reportProgress(c transport.Ctl, p *prompt, key circuit.Key) {
	now, cc := c.Now(), cl.cc
	cl.w.do(c, func() func() {
		snap, err := cc.Progress(context.Background(), key, now)
		if err != nil {
			cl.log.Debug("circuit progress", "key", key.String(), "err", err)
			return nil
		}
		return cl.reported(c, p, "progress", snap)
	})
}
