package guard

import (
	"sync"

	"github.com/acp-guard/acp-guard/policy"
	"github.com/acp-guard/acp-guard/transport"
)

// journal writes attempt records off the relay's lock. In the live proxy
// (a Ctl with a Poster) records go, in order, to one writer goroutine that
// appends and syncs each and reports the result back into the relay's
// event loop, so the relay never waits on a disk. Without a Poster (the
// offline player, unit tests) records are written in line and the result
// is reported at once.
//
// The writer goroutine is started by the first record and owned by the
// Guard: Close ends it once every queued record is written; nothing else
// waits for it.
//
// Records are numbered from 1 in the order they are appended. Where the
// guard learns each result — in the event loop, when a waited-for write
// completes or any write fails — it tells Config.OnAttemptLogged (the
// transcript records it), and a DeferredAttemptLog (a replay) completes
// each write where the recording says it completed.
type journal struct {
	log      AttemptLog // nil: no attempt log; work is scheduled at once
	onLogged func(seq int, err error)
	seq      int // records appended so far (the event loop's)

	mu      sync.Mutex
	queue   []journalJob
	wake    chan struct{} // cap 1: records queued
	done    chan struct{} // closed when the writer goroutine returns
	started bool
	closing bool
}

type journalJob struct {
	rec  policy.Record
	then func(error) // nil: nobody waits for this record
	post func(func())
	// failuresOnly: nobody waits, then only reports a failed write.
	failuresOnly bool
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
	post := posterOf(c)
	if post == nil {
		if d, ok := j.log.(DeferredAttemptLog); ok {
			if then == nil {
				then = func(error) {}
			}
			d.AppendThen(j.seq, rec, then)
			return
		}
		err := j.log.Append(rec)
		if then != nil {
			then(err)
		}
		return
	}
	j.mu.Lock()
	if j.closing {
		j.mu.Unlock()
		return // the session is over: nothing is scheduled any more
	}
	j.queue = append(j.queue, journalJob{rec: rec, then: then, post: post, failuresOnly: failuresOnly})
	if !j.started {
		j.started = true
		j.wake = make(chan struct{}, 1)
		j.done = make(chan struct{})
		go j.run()
	}
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
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

// posterOf returns the Ctl's way back into the event loop (nil: none).
func posterOf(c transport.Ctl) func(func()) {
	if pc, ok := c.(interface{ Poster() func(func()) }); ok {
		return pc.Poster()
	}
	return nil
}

// run is the writer goroutine: it writes queued records front to back and
// returns when Close was called and the queue is empty.
func (j *journal) run() {
	defer close(j.done)
	for {
		j.mu.Lock()
		jobs := j.queue
		j.queue = nil
		closing := j.closing
		j.mu.Unlock()
		if len(jobs) == 0 {
			if closing {
				return
			}
			<-j.wake
			continue
		}
		for _, job := range jobs {
			err := j.log.Append(job.rec)
			if job.then != nil && (err != nil || !job.failuresOnly) {
				then := job.then
				job.post(func() { then(err) })
			}
		}
	}
}

// close writes what is queued and ends the writer goroutine.
func (j *journal) close() {
	j.mu.Lock()
	j.closing = true
	started := j.started
	j.mu.Unlock()
	if !started {
		return
	}
	select {
	case j.wake <- struct{}{}:
	default:
	}
	<-j.done
}
