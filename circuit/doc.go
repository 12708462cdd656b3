// Package circuit keeps the shared circuits that stop many sessions — in one
// acp-guard process, in several on one machine, or on several machines —
// from all retrying into the same provider outage: while a circuit is open,
// exactly one session probes the provider and the others wait for its
// outcome.
//
// # Place in the module
//
// The guard uses it (and fleet, to read records); it imports nothing of
// the module but internal/safefile (internal/archtest checks that), and
// github.com/gofrs/flock and github.com/nats-io/nats.go for its stores.
// The guard translates a classify verdict into a [Key] and a [Failure]. It
// does no I/O besides its store and starts no goroutines (the NATS client
// runs its own connection goroutines, owned by the NATS store [OpenStore]
// returns and ended by its Close, or by the caller's shared connection). Every decision takes its now from the caller; the clock
// is read only to measure store latency (for timeouts) and to wait out
// contention.
//
// # The model
//
// A circuit is named by a [Key] = (namespace, adapter/provider id, model
// when known, verdict scope). Its state is a [Record]:
//
//   - closed: OpenUntil is zero (or the record is stale, below). Everyone
//     dispatches. For ReleaseWindow after it closed, a session asking is
//     told to wait until ClosedAt + jitter(holder) — so the sessions parked
//     during the outage leave spread over the window, not in one
//     millisecond.
//   - open: OpenUntil is the end of the cooldown. Before it, every session
//     that wants to retry parks until OpenUntil + jitter(holder, round)
//     within the wake spread (min(step/4, ParkPoll/2)), so that the first
//     to wake takes the probe lease and the others find it instead of
//     racing for it. After it, the first to ask gets the probe lease —
//     except the session whose probe failed last, which waits out the
//     spread first: probing rotates over the sessions that wait.
//   - probing: open, cooldown over, and one session holds an unexpired
//     [Lease] {holder, until}. Others park and re-ask every ParkPoll (each
//     holder in [ParkPoll/2, ParkPoll)), never past the lease's end.
//
// The cooldown follows the circuit's own schedule, not one session's
// backoff: the failure that opens a circuit sets its step (the session's
// own next policy delay, Failure.Backoff, or a provider hint's distance),
// every failed probe doubles the step (capped by MaxCooldown), and a
// validated provider hint (Failure.CooldownUntil) only ever lengthens a
// cooldown. A session that parks learns why ([Decision].Wait): behind a
// cooldown (WaitCooldown: the time its own backoff would have waited),
// behind a running probe (WaitProbe) or in the release jitter
// (WaitRelease); the guard charges only cooldowns to the session's
// patience.
//
// Transitions (each one compare-and-swap on the stored record; a lost race
// re-reads and decides again, so exactly one session wins a lease; an
// operation whose decision changes nothing writes nothing):
//
//	operation                         effect
//	Fail(key, transient|hard, holder) not open → open for Backoff (epoch+1, step = Backoff);
//	                                  holder's probe failed → open for 2×step from now (step doubles), lease
//	                                  handed on, LastProbe = holder;
//	                                  cooldown over, no probe running → open for one step from now;
//	                                  otherwise (open, cooling down or another's probe running) nothing, unless
//	                                  a hint moves the cooldown by ≥ max(1 s, step/10) or the class turns hard
//	Fail(key, request|unclassified)   nothing (the store is not even read)
//	Acquire(key, holder, now)         Go | Park{Until, Wait} | Probe{Lease} as above; Probe sets Lease{holder, now+LeaseTTL}
//	Refresh(key, holder, now)         the holder's lease until now+LeaseTTL (also one that ran out if nobody took it
//	                                  over: its probe still runs); ErrLeaseLost if another session holds it now
//	Release(key, holder, now)         drops the holder's lease without an outcome (probe cancelled or stopped)
//	Progress(key, now)                open/probing → closed (ClosedAt = now, epoch+1); provider progress on the key,
//	                                  in the probe's turn or any other, is proof the outage is over
//
// A lease that is not refreshed (its process crashed) expires by itself;
// the next session to ask after Lease.Until takes it over. A record open
// with nobody probing for max(30 s, one step) after its cooldown (or its
// last lease) ended is stale: whoever waited on it is gone — or the store
// was away when its probe succeeded — so it reads as closed, costs no
// write, and the next failure opens it afresh ([Record.OpenAt]). Cooldowns
// are capped by MaxCooldown (24 h). The jitters are a hash of (Seed,
// holder, epoch or round): stable for one holder across repeated
// questions and across processes, spread over the holders, different in
// every probe round, deterministic in tests.
//
// Lease and cooldown times are wall-clock instants compared by whoever
// asks, so machines sharing a NATS store must keep their clocks in step
// (NTP) to well within LeaseTTL (30 s). A lease ending more than two TTLs
// after the asker's now binds nobody (a clock far ahead, or a hostile
// writer, cannot stall a circuit).
// Likewise a park never lasts longer than MaxCooldown (open) or
// ReleaseWindow (just closed), whatever times a record holds.
//
// # Stores
//
// All stores sit behind [Store]: Get → (record, revision), CompareAndSwap
// at a revision (0: must be absent), List, Delete. [Circuits] runs every
// operation as read → decide → swap on it. A nil store is "--circuits off":
// Acquire always says Go.
//
// A store failure never blocks a turn. Each store call (a read, a swap) is
// bounded by a timeout that follows the measured latency — four times
// (smoothed latency + 4 × its deviation), never below OpTimeout (2 s) nor
// above MaxOpTimeout (30 s) — so a store slowed by load is not taken for a
// dead one. A store that is a [Pinger] (a store over NATS) is not given up at
// that timeout: its connection's server is pinged, and if it answers the
// store is slow, not down — the call is waited for, pinged again at each
// further timeout, up to four timeouts in all (at most MaxOpTimeout;
// "circuit store slow" logged
// once per slow spell); a ping without an answer fails the call at once,
// as a timeout. A lost compare-and-swap is contention, not failure: the
// operation waits a jittered backoff (random below the latency × 2^round,
// at most 250 ms) and decides again on the fresh record; after casRounds
// lost rounds it gives up with ErrContended (Acquire then parks one
// poll), still without touching the store's health. On a Pinger, a swap
// lost at a revision the re-read still shows is a write in flight (the
// leader holds it for its quorum): waited for without spending a round,
// as long. When a call fails,
// the operation returns at once, with an error wrapping [ErrStore]:
// Acquire decides on the process's last view of the circuit (the record
// of its last operation the store served whole) — parking as it says,
// never taking the lease, Go when there is none, it is closed, or it is
// older than LeaseTTL — and the other operations change nothing; the store
// is left alone for a pause of 0.5 s, then 1 s, up to StoreRetry (2 s, so
// that sharing resumes within about 2 s of a store coming back), each
// pause drawn in [half, whole] so that processes that lost the store
// together come back spread: operations in between answer at once. A
// store that reconnects (NATS) is asked at once, and so is one whose error
// says it stored nothing and is only between leaders or catching up
// (kvstore.ErrUnsettled: no responders, "temporarily unavailable"). The
// Logger gets "circuit store unavailable" once per store outage and
// "circuit store recovered" when it answers again — sharing resumes with
// that answer.
//
// [OpenStore] opens the store over a backend of internal/kvstore (one
// registry of backends: file, NATS, memory; the file and NATS code is
// kvstore's, shared with the held prompts, presence and the catalogue
// overlay). The file store (embedded default, $XDG_STATE_HOME/acp-guard/)
// is one JSON document, circuits.json, shared by every acp-guard process
// of the user on the machine. Writers take an exclusive flock(2) on
// circuits.lock through github.com/gofrs/flock (plus a mutex per handle,
// since an flock belongs to an open file), re-read, swap, write a temporary file (O_EXCL, 0600) and
// rename it over the document; readers take no lock, because the rename is
// atomic. There is no fsync: a power loss can at worst leave a torn file,
// which reads as "no circuits" (soft state), and the lock is held for
// microseconds instead of a disk flush. A writer that cannot get the lock
// within its call's timeout reports a conflict (other writers held it: an
// flock ends with its holder's process), which is contention, not a
// failed store. Files are 0600 and opened with O_NOFOLLOW, the
// directory is created 0700 (safefile.MkdirPrivate). The document is bounded
// (8 MiB, 4096 circuits; records untouched for 48 h behind the newest are
// pruned unless still cooling down). A corrupt document reads as empty and
// is replaced by the next write; a well-formed document of another format
// is left alone (ErrFormat).
//
// Why gofrs/flock and not go.etcd.io/bbolt: bbolt holds an exclusive file
// lock for as long as a database is open read-write, so several long-lived
// acp-guard processes could share it only by opening and closing the whole
// database (mmap and all) around every operation, and its file is opaque to
// people. Circuits are a few hundred bytes each, written only when a
// provider fails, recovers or a probe starts: a lock held for one
// read-modify-rename, lock-free readers, and a document a person can read
// are the better fit.
//
// The NATS store (--circuits nats://HOST:PORT) keeps each record in a NATS
// JetStream key-value bucket (github.com/nats-io/nats.go, jetstream
// package), bucket "acp_guard_circuits", created on first use with one
// revision per key and a bucket TTL of 48 h (a key nobody wrote for 48 h
// disappears). The NATS key is Key.ID, "ns.<namespace>.<hash>", so a NATS
// permission on "$KV.acp_guard_circuits.ns.<namespace>.>" confines a
// tenant; the value is the JSON record. A read is the JetStream API's
// message get ("$JS.API.STREAM.MSG.GET.KV_acp_guard_circuits", answered
// by the stream's leader), made by the store itself (kvstore): every
// server of a cluster receives it, and the answer "temporarily
// unavailable" of one that lost track of the leader is taken only when
// the leader's does not follow within 0.5 s; a read not answered is sent
// again after half of what is left of its time, at most every 2 s. CompareAndSwap is Create (rev 0,
// also over a deleted key) or Update at the revision; a wrong-last-sequence
// answer is ErrConflict. The client reconnects forever in the background
// (every second, plus the client's jitter) and buffers nothing while
// disconnected, so an operation during an outage fails at once instead of
// waiting; a server unreachable at start is not an error. A server that
// comes back without its store (a new store directory) gets the bucket
// created again by the next operation.
//
// # Stored format (version 1)
//
// A record, the NATS value and each entry of the file document:
//
//	{"v":1,
//	 "key":{"namespace":"default","provider":"cursor-acp","model":"gpt-5","scope":"provider"},
//	 "openUntil":"2026-03-01T12:01:30Z",      // absent when closed
//	 "openedAt":"…", "closedAt":"…",          // absent when unknown
//	 "code":"provider_overloaded","class":"transient",   // latest failure
//	 "failures":3,"probes":1,"epoch":5,
//	 "cooldownMs":4000,                        // the schedule's current step (absent in older records)
//	 "lastProbe":"host/pid/guard/session/request",  // whose probe failed last (absent when none)
//	 "lease":{"holder":"host/pid/guard/session/request","until":"…","grantedAt":"…"},  // absent when none
//	 "updatedAt":"…"}
//
// The file document: {"format":"acp-guard.circuits/1","seq":N,
// "entries":{"<Key.ID>":{"rev":R,"record":{…}}}}; seq is the last revision
// handed out, so a deleted and re-created record never reuses a revision.
// A reader refuses records whose "v" is not 1 and documents whose format is
// not acp-guard.circuits/1 (ErrFormat → proceed as if no circuit); new
// optional members may be added within version 1.
//
// # How the guard calls it
//
// The integration points in the recovery state machine (guard/doc.go's
// table: the states parked and probing, the events park, probe, progress
// and circuit_open, and the lease column of every row out of probing).
// Store operations can take a store call's timeout (a file lock, a NATS
// round trip), so the guard runs each one off its event loop — on one
// worker goroutine owned by the guard (guard/worker.go) that runs the
// operations in order and posts each result back as an event armed under
// the prompt's fence (guard/fence.go) — and never waits for it on the relay path. Every
// operation is given the now of the event that asked for it. A result
// arriving for a stale generation is dropped (a lease it acquired is
// released).
//
//  1. A classified transient or hard failure of any attempt: Fail(key,
//     {class, code, CooldownUntil: the validated provider hint or zero,
//     Backoff: the session's own next policy delay}, holder, now). The
//     key's scope is the verdict's scope, the model the attempt's model
//     when known, the namespace --circuit-namespace. holder is unique per
//     turn across machines: host/pid/guard/sessionId/requestId.
//  2. A held prompt about to dispatch — its wait's deadline, or a model
//     switch the agent accepted — asks Acquire on the circuit of its
//     latest failure on the model it now runs. Go → due (or switched):
//     dispatch. Probe → probe: dispatch as the circuit's probe (state
//     probing), Refresh every RefreshEvery() while its turn runs. Park →
//     park (state parked): ask again at Decision.Until. A WaitCooldown
//     park spends the prompt's parking budget — the delays its own retry
//     schedule has left (it keeps its retries while parked), at least 5 s
//     after a model switch — by the cooldown's remaining time; WaitProbe
//     and WaitRelease parks spend nothing. When a cooldown ends beyond the
//     budget (by more than a second) the prompt is answered at once with its ProviderError,
//     recovery.reason "circuit_open" and "circuit": Decision.Circuit
//     ({key, state, cooldownUntil} — the [Snapshot] JSON is exactly that
//     member), the state then always "open". Late activity or a client
//     cancel while parked end the turn as in any held state.
//  3. Leaving probing settles the lease as the table's row says: the first
//     provider progress (assistant or thought chunk, tool call) or a
//     successful return → Progress(key); a classified transient or hard
//     failure → the Fail of point 1 with the probe's holder (doubles the
//     step and hands the lease on); any other end — cancelled, late
//     activity, unsafe, unclassified, stalled, the agent's exit — →
//     Release(key, holder).
//  4. New prompts (not recovering) never call Acquire: a circuit never
//     blocks them. Their failures call Fail (writing nothing while the
//     circuit is open and the failure moves nothing).
//  5. An error from any operation is logged by the guard at debug (the
//     package already logs store outages once) and the decision it came
//     with is followed: a store failure means "as if no circuit".
//
// Cooldown-aware fallback reads a candidate model's circuit with
// Get: Record.OpenAt, OpenUntil, Code and Class say whether it is cooling
// down and whether a cooldown probe is allowed; a model switched to then
// asks its circuit as in point 2, so a fallback onto a circuit about to
// end its cooldown takes the probe lease like any retry.
package circuit
