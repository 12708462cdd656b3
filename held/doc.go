// Package held shares the prompts acp-guard holds for recovery with
// operators: each acp-guard process publishes the prompts it holds —
// waiting for a provider's reset, for a retry, or parked on a circuit — as
// entries in the store the circuits use (the state directory, or NATS
// across machines), and takes the actions an operator writes on them:
// retry now, skip to the next fallback model, stop (`acp-guard held`).
//
// # Place in the module
//
//	cmd/acp-guard ──► guard ──► held ──► internal/safefile
//	acpguard (root) ──►            ──► github.com/gofrs/flock, github.com/nats-io/nats.go
//
// held imports nothing else of the module. It does no I/O besides its
// store; a file or NATS store's Watch runs one goroutine, owned by
// the watch and ended by its stop. Decisions take their now from the
// caller.
//
// # The model
//
// One entry per held prompt, keyed by ID(ProcessPrefix(namespace,
// host/pid/guard), session, request) = "h.<namespace>.<16 hex>.<16 hex>":
// the namespace is the circuits' (--circuit-namespace), so a NATS
// permission on "$KV.acp_guard_held.h.<namespace>.>" confines a tenant,
// and each process's entries share a prefix its watch covers.
//
//   - The holder writes the entry (Board.Put): once the prompt has been
//     held for PublishAfter (a short retry wait costs no write), again
//     when its state changes within the hold (retry_wait → parked), every
//     RefreshEvery while it lasts (Expires = now + TTL), and once more
//     when the hold ends, with the state it went to and Expires = now +
//     ResultTTL. No other write: a parked prompt's repeated questions to
//     its circuit write nothing here. A holder that dies simply stops
//     refreshing; readers ignore an entry after Expires.
//   - An operator writes only Request (Board.Ask), by compare-and-swap
//     at the revision it read, naming the hold it saw (Entry.Hold): the
//     entry must be held, offer the action, and carry no other request.
//   - The holder learns of the request from its watch (Store.Watch over
//     its prefix: a JetStream watcher, or a stat of the file every
//     200 ms), or at its next write of the entry (Put returns the request
//     it kept). It takes the action through the guard's state machine —
//     the replay-safety gate still decides — and writes the Result (same
//     id: the resulting state, or why it refused). A request for a hold
//     that is over is answered stale by the holder's next write; it is
//     never taken.
//   - Every write is a compare-and-swap; a lost one re-reads and merges
//     (the holder keeps a pending request, Put's merge), at most
//     casRounds times.
//
// A store failure never blocks a turn: the guard calls the board on a
// worker of its own (guard/held.go), every call is bounded by
// CallTimeout, and a failed store is left alone for a pause of 0.5 s,
// doubling up to 8 s (each drawn in [half, whole]), logged once ("held-prompt store unavailable") — its prompts are
// then only invisible to operators. The client's own _acp-guard/recovery
// request needs no store at all.
//
// # Stores
//
// [OpenStore] opens them over a shared backend of internal/kvstore (its
// one registry; memory keeps nothing shared, so it opens none).
//
// The file store keeps every entry in one JSON document, held.json, in the
// state directory beside circuits.json, with the same rules: writers take
// an exclusive flock(2) on held.lock, re-read, swap, and replace the
// document atomically (safefile.ReplaceDocument); readers take no lock;
// files 0600 in a 0700 directory, opened without following symbolic
// links; a corrupt document reads as empty and is replaced by the next
// write. Each write drops the entries that expired before the newest
// update in the document, and the oldest beyond 4096.
//
// The NATS store keeps each entry as one value of the JetStream key-value
// bucket "acp_guard_held" (created on first use, one revision per key, max
// age one hour: ended and abandoned entries disappear; held ones are
// rewritten every RefreshEvery), on the server --circuits names. Create
// (revision 0) or Update at the revision; a wrong-last-sequence answer is
// ErrConflict. List reads a prefix with one watcher (the current values,
// then the end marker); Watch is a JetStream watcher for updates only.
//
// # Stored format (version 1)
//
//	{"v":1,"namespace":"default",
//	 "holder":"host/pid/guard/session/request","host":"host","pid":4242,
//	 "sessionId":"…","requestId":"7",          // the client's id of its session/prompt, as JSON text
//	 "agent":"codex-acp","model":"gpt-5",      // model absent when unknown
//	 "code":"provider_overloaded","class":"transient",
//	 "state":"retry_wait",                     // waiting_for_reset | retry_wait | parked; once ended, where it went
//	 "hold":2,                                 // the prompt's holds so far: a request names one
//	 "since":"…","next":"…",                   // next: the next attempt (null when unknown)
//	 "attempt":1,"maxRetries":3,
//	 "actions":["retry_now","skip","stop"],    // what the holder offers now (empty once ended)
//	 "expires":"…","updatedAt":"…",
//	 "request":{"id":"…","action":"skip","by":"operator","hold":2,"at":"…"},   // absent when none
//	 "result":{"id":"…","action":"skip","state":"switching","error":"…","at":"…"}}  // the answer to the last request
//
// The file document: {"format":"acp-guard.held/1","seq":N,
// "entries":{"<id>":{"rev":R,"entry":{…}}}}. Readers refuse entries whose
// "v" is not 1 and documents of another format (ErrFormat); new optional
// members may be added within version 1. Agent-supplied strings are
// bounded (Entry.Bound: 256 bytes, 128 for the request id).
package held
