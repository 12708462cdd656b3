package guard

import (
	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// journal writes attempt records off the relay's lock, on its worker
// (worker.go): in the live proxy records go, in order, to the worker's
// goroutine, which appends and syncs each and reports the result back
// into the relay's event loop, so the relay never waits on a disk.
// Without a Poster (the offline player, unit tests) records are written
// in line and the result is reported at once — or, for a
// DeferredAttemptLog (a replay), where the recording says the live proxy
// learned it.
//
// Records are numbered from 1 in the order they are appended. Where the
// guard learns each result — in the event loop, when a waited-for write
// completes or any write fails — it tells Config.OnAttemptLogged (the
// transcript records it).
type journal struct {
	log      AttemptLog // nil: no attempt log; work is scheduled at once
	onLogged func(seq int, err error)
	seq      int // records appended so far (the event loop's)
	w        worker
}

// append writes rec and then reports the result to then (nil: nobody
// waits) in the relay's event loop.
func (j *journal) append(c transport.Ctl, rec policy.Record, then func(error)) {
	if j.log == nil {
		if then != nil {
			then(nil)
		}
		return
	}
	j.seq++
	failuresOnly := then == nil
	then = j.learned(j.seq, then)
	if d, ok := j.log.(DeferredAttemptLog); ok && posterOf(c) == nil {
		if then == nil {
			then = func(error) {}
		}
		d.AppendThen(j.seq, rec, then)
		return
	}
	log := j.log
	j.w.do(c, func() func() {
		err := log.Append(rec)
		if then == nil || (err == nil && failuresOnly) {
			return nil
		}
		return func() { then(err) }
	})
}

// learned wraps then (nil: nobody waits) so that OnAttemptLogged hears of
// record seq's result where the guard learns it; nil when nobody needs
// the result.
func (j *journal) learned(seq int, then func(error)) func(error) {
	if j.onLogged == nil {
		return then
	}
	on := j.onLogged
	return func(err error) {
		on(seq, err)
		if then != nil {
			then(err)
		}
	}
}

// close writes what is queued and ends the worker.
func (j *journal) close() { j.w.close() }

// DeferredAttemptLog is an AttemptLog whose writes complete later, on the
// relay's event loop: a replay completes each write where the recording
// says the live proxy learned its result, so that what happened in between
// (a late frame before the retry's notice) happens in the same order.
// Without a Poster, the guard calls AppendThen instead of Append.
type DeferredAttemptLog interface {
	AttemptLog
	// AppendThen writes record seq (numbered from 1 in append order) and
	// calls done with the result, now or from a later event.
	AppendThen(seq int, rec policy.Record, done func(error))
}
