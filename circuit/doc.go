// Package circuit keeps the shared circuits that stop many sessions — in one
// acp-guard process, in several on one machine, or on several machines —
// from all retrying into the same provider outage: while a circuit is open,
// exactly one session probes the provider and the others wait for its
// outcome.
//
// # Place in the module
//
//	cmd/acp-guard ──► guard ──► circuit ──► internal/safefile (MkdirPrivate)
//	                                    ──► github.com/gofrs/flock, github.com/nats-io/nats.go
//
// circuit imports nothing else of the module: the guard translates a
// classify verdict into a [Key] and a [Failure]. It does no I/O besides its
// store, reads no clock (every operation takes now), and starts no
// goroutines; the NATS client runs its own connection goroutines, owned by
// the [NATSStore] and ended by its Close.
//
// # The model
//
// A circuit is named by a [Key] = (namespace, adapter/provider id, model
// when known, verdict scope). Its state is a [Record]:
//
//   - closed: OpenUntil is zero. Everyone dispatches. For ReleaseWindow
//     after it closed, a session asking is told to wait until
//     ClosedAt + jitter(holder) — so the sessions parked during the outage
//     leave spread over the window, not in one millisecond.
//   - open: OpenUntil is the end of the cooldown. Before it, every session
//     that wants to retry parks until OpenUntil. After it, the first to ask
//     gets the probe lease.
//   - probing: open, cooldown over, and one session holds an unexpired
//     [Lease] {holder, until}. Others park and re-ask every ParkPoll (each
//     holder in [ParkPoll/2, ParkPoll)), never past the lease's end.
//
// Transitions (each one compare-and-swap on the stored record; a lost race
// re-reads and decides again, so exactly one session wins a lease):
//
//	operation                         effect
//	Fail(key, transient|hard, until)  closed → open until `until` (epoch+1); open → OpenUntil = max(OpenUntil, until);
//	                                  the caller's lease, if it held one, is dropped (a failed probe hands the lease on)
//	Fail(key, request|unclassified)   nothing (the store is not even read)
//	Acquire(key, holder, now)         Go | Park{Until} | Probe{Lease} as above; Probe sets Lease{holder, now+LeaseTTL}
//	Refresh(key, holder, now)         the holder's lease until now+LeaseTTL (also one that ran out if nobody took it
//	                                  over: its probe still runs); ErrLeaseLost if another session holds it now
//	Release(key, holder, now)         drops the holder's lease without an outcome (probe cancelled or stopped)
//	Progress(key, now)                open/probing → closed (ClosedAt = now, epoch+1); provider progress on the key,
//	                                  in the probe's turn or any other, is proof the outage is over
//
// A lease that is not refreshed (its process crashed) expires by itself;
// the next session to ask after Lease.Until takes it over. Cooldowns are
// capped by MaxCooldown (24 h). The release jitter is a hash of (Seed,
// holder, epoch): stable for one holder across repeated questions and
// across processes, spread over the holders, deterministic in tests.
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
// A store failure never blocks a turn. Each operation is bounded by
// OpTimeout; when the store fails, the operation returns the decision a
// guard without circuits would take (Acquire: Go) together with an error
// wrapping [ErrStore], the store is left alone for StoreRetry (operations
// answer at once), and the Logger gets "circuit store unavailable" once per
// store outage and "circuit store recovered" when it answers again.
//
// [FileStore] (embedded default, $XDG_STATE_HOME/acp-guard/) is one JSON
// document, circuits.json, shared by every acp-guard process of the user on
// the machine. Writers take an exclusive flock(2) on circuits.lock through
// github.com/gofrs/flock (plus a mutex per handle, since an flock belongs to
// an open file), re-read, swap, write a temporary file (O_EXCL, 0600) and
// rename it over the document; readers take no lock, because the rename is
// atomic. There is no fsync: a power loss can at worst leave a torn file,
// which reads as "no circuits" (soft state), and the lock is held for
// microseconds instead of a disk flush. Files are 0600 and opened with O_NOFOLLOW, the
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
// [NATSStore] (--circuits nats://HOST:PORT) keeps each record in a NATS
// JetStream key-value bucket (github.com/nats-io/nats.go, jetstream
// package), bucket "acp_guard_circuits", created on first use with one
// revision per key and a bucket TTL of 48 h (a key nobody wrote for 48 h
// disappears). The NATS key is Key.ID, "ns.<namespace>.<hash>", so a NATS
// permission on "$KV.acp_guard_circuits.ns.<namespace>.>" confines a
// tenant; the value is the JSON record. CompareAndSwap is Create (rev 0,
// also over a deleted key) or Update at the revision; a wrong-last-sequence
// answer is ErrConflict. The client reconnects forever in the background and
// buffers nothing while disconnected, so an operation during an outage fails
// at once instead of waiting; a server unreachable at start is not an error.
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
//	 "lease":{"holder":"host/pid/session/request","until":"…","grantedAt":"…"},  // absent when none
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
// The integration points in the recovery state machine (guard/doc.go). Store
// operations can take up to OpTimeout (a file lock, a NATS round trip), so
// the guard runs each one off its event loop — one goroutine per operation,
// owned by the guard, that ends when the operation returns and posts the
// result back as an event fenced by the turn's generation — and never waits
// for it on the relay path. A result arriving for a stale generation is
// dropped (a lease it acquired expires or is released).
//
//  1. active → classified transient/hard failure: Fail(key, {class, code,
//     CooldownUntil: validated provider hint, else now + the session's next
//     policy delay}, holder, now). Request and unclassified verdicts may
//     call it too: it does nothing. The key's scope is the verdict's scope,
//     the model the turn's model when known, the namespace
//     --circuit-namespace. holder is unique per turn across machines:
//     host/pid/sessionId/requestId.
//  2. retry_wait / waiting_for_reset deadline, before dispatch: Acquire.
//     Go → retrying as today. Probe → retrying as the probe; Refresh every
//     RefreshEvery() while its turn runs. Park{Until} → stay in the waiting
//     state and ask again at min(Until, the end of the session's own
//     schedule); when the own schedule ends while still parked, answer the
//     client with the ProviderError, recovery.reason "circuit_open" and
//     "circuit": Decision.Circuit ({key, state, cooldownUntil} — the
//     [Snapshot] JSON is exactly that member). Late activity or a client
//     cancel while parked end the turn as in any waiting state.
//  3. The probe's turn: the first sign of provider progress (assistant or
//     thought chunk, tool call) or its successful return → Progress(key).
//     A classified failure → Fail with the probe's holder (re-opens with
//     the next cooldown and hands the lease on). Cancelled, late activity,
//     unsafe or unclassified → Release(key, holder).
//  4. New prompts (not recovering) never call Acquire: a circuit never
//     blocks them. Their failures call Fail; their progress may call
//     Progress when the guard knows the key's circuit to be open (it is a
//     no-op write-free read otherwise).
//  5. An error from any operation is logged by the guard at debug (the
//     package already logs store outages once) and the decision it came
//     with is followed: a store failure means "as if no circuit".
//
// Cooldown-aware fallback (spec 002) reads a candidate model's circuit with
// Get: Record.OpenUntil, Code and Class say whether it is cooling down and
// whether a cooldown probe is allowed.
package circuit
