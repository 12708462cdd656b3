// Package kvstore is the one revisioned key-value layer beneath acp-guard's
// shared state: the circuits (package circuit), the held prompts
// (package held) and the presence records (package presence) are typed
// views over it ([View]: where they are kept, their own value encoding,
// their own error names), so opening, loading, compare-and-swap, pruning,
// recovering a corrupt document, watching and NATS bucket handling are
// written once.
//
// A [Store] keeps opaque values by key, each with a revision; every change
// is a compare-and-swap against the revision read (0: the key is absent),
// and a lost one is [ErrConflict] — contention, which the caller answers by
// reading again, never a failed store. Three implementations:
//
//   - [File]: one JSON document in a directory, shared by every process of
//     the user on the machine (the embedded default).
//   - [NATS]: a NATS JetStream key-value bucket, shared by every process on
//     every machine that reaches the server. [DialNATS] makes the one
//     connection a process's buckets share.
//   - [Memory]: this process only (replayed and served sessions, tests).
//
// # One opener
//
// A store spec (a --circuits value) names a backend of one registry
// (open.go: file, memory, NATS; [Register] adds one, as a test does):
// [ParseSpec] says which, and [Open] opens one view's [Schema] — its file
// document, its bucket, whether it is Shared — with the process's
// [Options] (the state directory, the NATS connection or how to dial it).
// [Share] makes the one connection a process's views share. The views
// (circuit, held, presence: a [View] each, whose Open returns a [Typed]
// store; the root package's catalogue overlay: a Schema of raw values)
// open through it, and none of them knows a backend.
// A new backend is one file here and one row of the registry.
//
// # The file document
//
//	{"format":"<FileOptions.Format>","seq":N,
//	 "entries":{"<key>":{"rev":R,"<FileOptions.Member>":<value>},…}}
//
// seq is the last revision handed out; a write takes the next one, so a
// key deleted and written again never reuses a revision. encoding/json
// would write the same bytes for the clients' typed documents (members in
// this order, entries by key, values compacted), so documents written
// before this package existed load and are rewritten unchanged but for the
// change (circuit/testdata/circuits-v1-before.json and
// held/testdata/held-v1-before.json, with their -after documents, check
// it).
//
// Writers take an exclusive flock(2) on a lock file beside the document
// (github.com/gofrs/flock) and a mutex per handle, re-read, apply the
// change, prune, and replace the document atomically
// (safefile.ReplaceDocument); readers take no lock. A writer that cannot
// get the lock within its context reports ErrConflict (other writers held
// it). Files are 0600 in a 0700 directory, opened without following
// symbolic links. The document is bounded: larger than
// FileOptions.MaxBytes it reads as corrupt; each write drops the values
// that expired before the newest update in the document
// (FileOptions.Times: no clock is read) and then the oldest beyond
// FileOptions.MaxEntries. A corrupt document (not JSON, too large) reads
// as empty and the next write replaces it — what these stores keep is soft
// state; a well-formed document of another format is neither read nor
// overwritten ([ErrFormat]). A watch stats the document every
// FileOptions.Poll and reads it only when it changed.
//
// # The NATS bucket
//
// One value per key, history 1, max age NATSOptions.TTL, created on first
// use. CompareAndSwap is Create (revision 0, also over a deleted key) or
// Update at the revision. After an error saying the server no longer has
// the bucket (a server restarted without its store directory) the next
// operation binds it again, creating it if need be. The connection
// reconnects forever and buffers nothing while disconnected, so an
// operation during an outage fails at once; an unreachable server at
// start is not an error. Get is the JetStream message get, made by the
// store itself (natsget.go): a server that lost track of its cluster's
// leader answers it "temporarily unavailable" at once, and the store
// waits up to 0.5 s more for the leader's answer; a get without an answer
// is sent again after half of what is left of its time, at most every
// 2 s, until answered. An error that says nothing was
// stored and a leader is coming (no responders, "temporarily
// unavailable") wraps [ErrUnsettled]. List is one watcher over the prefix
// (the current values, then the end marker); Watch is a watcher for
// updates only.
package kvstore
