// Package presence publishes which guarded sessions are alive, for
// operators (`acp-guard console`): each acp-guard process keeps one record
// — its agent, model, state, current turn, a heartbeat and the last
// hour's ProviderErrors by code and class — in the store its sessions
// share (the state directory, or NATS across machines), under a lease. A
// process that dies stops its heartbeat, and its record is dropped from
// every list once the lease ran out; one that ends cleanly deletes it.
//
// # Place in the module
//
//	acpguard (root) ──► presence ──► internal/kvstore
//	cmd/acp-guard (console) ──►
//
// presence imports nothing else of the module. A Publisher runs one
// goroutine (its heartbeat), started by Start and ended by Close, which
// waits for it; Update only changes memory under a mutex and never blocks
// on the store, so the guard's event loop may call it. Readers (Live)
// take their now from the caller.
//
// # The model
//
//   - One record per process and guard, keyed "p.<namespace>.<16 hex>"
//     (a hash of the holder, host/pid/guard, the circuits' lease holder
//     id), so a NATS permission on "$KV.acp_guard_presence.p.<namespace>.>"
//     confines a tenant, as for circuits and held prompts.
//   - The publisher writes the record at start, then every Every (5 s)
//     drawn with ±Jitter (20 %) so that a fleet started at once spreads its
//     writes, and, after a change (a turn began, a prompt was held, an
//     error arrived), at once but no sooner than MinGap (1 s) after the
//     previous write. Each write sets Expires = heartbeat + Lease (15 s):
//     three heartbeats may be lost before the session is taken for dead.
//   - Live lists the records whose lease has not run out at now; nothing
//     else decides. The file store drops records that expired before the
//     newest heartbeat in the document on every write; the NATS bucket's
//     max age is the lease, so an abandoned record disappears by itself.
//   - Every write is a compare-and-swap at the revision the publisher
//     last wrote; a lost one (a record left by an earlier process with
//     the same holder) reads the revision and writes once more.
//   - A store failure costs the session nothing: the write is bounded by
//     CallTimeout, logged once ("presence store unavailable") and tried
//     again at the next heartbeat; recovery is logged at info.
//
// Nothing of a prompt is published: the record holds ids, names, codes,
// classes, counts and times, each string clipped to 256 bytes.
//
// # Stores
//
// [OpenStore] opens them over a shared backend of internal/kvstore (its
// one registry). The file store keeps every record in one JSON document, presence.json,
// in the state directory beside circuits.json and held.json, with their
// rules (internal/kvstore's File): writers take an exclusive flock(2) on
// presence.lock, re-read, swap and replace the document atomically;
// readers take no lock; files 0600 in a 0700 directory, opened without
// following symbolic links; the document is bounded (1 MiB, 2048 records;
// a larger one reads as empty and the next write replaces it).
//
// The NATS store keeps each record as one value of the JetStream key-value
// bucket "acp_guard_presence" (its own bucket, created on first use, one
// revision per key, max age the lease), on the server --circuits names.
//
// A --circuits value names the backend; "off" and "memory" name none: nothing is published and nothing runs.
//
// # Stored format (version 1)
//
//	{"v":1,"namespace":"default",
//	 "holder":"host/4242/1","host":"host","pid":4242,
//	 "agent":"codex-acp","model":"gpt-5",      // model absent when unknown
//	 "state":"idle",                           // starting | idle | prompting | a held prompt's state (retry_wait, parked, …) | agent_exited
//	 "turn":3,"inFlight":0,                    // prompts begun so far; prompts not answered yet
//	 "sessionId":"…",                          // the latest prompt's session (absent before one)
//	 "started":"…","heartbeat":"…","expires":"…",
//	 "errors":[{"code":"provider_overloaded","class":"transient","slot":5912345,"n":2}]}
//
// errors counts the ProviderErrors the session classified, by code and
// class, in slots of SlotWidth (5 min; slot = Unix seconds / 300), only
// slots within the last hour, at most MaxErrors rows (the oldest go
// first). The file document: {"format":"acp-guard.presence/1","seq":N,
// "entries":{"<key>":{"rev":R,"presence":{…}}}}. Readers skip records
// whose "v" is not 1.
package presence
