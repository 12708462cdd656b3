// Package policy owns acp-guard's recovery policy: the versioned per-class
// policy document, its validation, the pure evaluator that turns one failed
// attempt into a decision (stop, wait for a reset, retry, skip), the human
// schedule a document implies, the clock abstraction the recovery engine
// uses, and the append-only attempt log.
//
// policy imports only classify's registry of codes (names and classes: for
// per-code overrides and the codes that are never retried) and
// internal/safefile (the attempt log's file); callers translate a verdict
// and the turn's evidence into a [Failure]. (ARCHITECTURE.md places it
// beside classify; internal/archtest checks its imports.)
//
// # The policy document (version 1)
//
// A JSON object with these fields, each of which may be omitted (an omitted
// part takes the default: immediate skip, retry and reset waiting
// disabled), so {"transient":{"retry":{"max_retries":3,
// "initial_interval_seconds":5}}} is a whole document:
//
//	{"version": 1,
//	 "transient": {"retry": {"enabled": true, "max_retries": 3, "initial_interval_seconds": 5},
//	               "wait_for_reset": {"enabled": true, "max_wait_seconds": 300},
//	               "on_exhausted": "skip"},
//	 "hard":      {"retry": {"enabled": false, "max_retries": 0, "initial_interval_seconds": 0},
//	               "wait_for_reset": {"enabled": false, "max_wait_seconds": 0},
//	               "on_exhausted": "stop"},
//	 "fallback_models": ["model-b", "model-c"]}
//
// Fields:
//
//   - version: 1 (the default).
//   - transient, hard: the two configurable classes. "request" and
//     "unclassified" are not configurable (request failures are never
//     retried, unclassified ones always stop) and, like any other key,
//     are refused.
//   - retry: enabled (default: true when the section sets a field, false
//     when it is empty), max_retries 1–10 and
//     initial_interval_seconds 1–3600 when enabled, both 0 when disabled.
//     Retry n (0-based) waits initial·2ⁿ seconds, each delay capped at 24 h.
//     A missing retry section means disabled.
//   - wait_for_reset: enabled (defaulted as for retry), max_wait_seconds 1–604800 (7 days)
//     when enabled, 0 when disabled. A missing section means disabled.
//   - on_exhausted: "skip" (next fallback model; the default) or "stop".
//   - fallback_models (optional): non-empty, unique model ids, tried in
//     order when a class ends in skip.
//   - codes (optional): per-code overrides, {"quota_limited": {…}}: each
//     member names a semantic code of the transient or hard class and has
//     the shape of a class policy (retry, wait_for_reset, on_exhausted,
//     the same limits and defaults). A failure with that code is evaluated
//     with its override instead of its class's policy, and its retry
//     budget and reset wait are counted apart from the class's. An unknown
//     code, a code of another class, and an override that retries or
//     waits for auth_required or missing_credentials are refused
//     ("codes.auth_required.retry.enabled: must be false: …").
//   - request (optional): {"compact_then_retry": bool}, default false. When
//     true the guard recovers a replay-safe context overflow with the
//     agent's compaction command and one retry (the guard's compaction); every
//     other request-class failure still stops.
//
// Unknown fields are errors. All problems are reported together as a
// [ValidationError] whose [FieldError]s name the field by path, e.g.
// "transient.retry.max_retries: must be 1–10 when retry is enabled (got 0)".
//
// Legacy rules are accepted in two shapes and normalized once:
// a bare JSON string ("try_next", "stop" or "retry_same"), or an object
// {"version":1,"legacy":"retry_same"} that may also carry fallback_models.
// try_next is no wait, no retry, then skip for both classes; stop is the
// same ending in stop; retry_same is one retry after 5 s, then stop.
// [Document.Normalized] always writes the version 1 shape.
//
// [Default] is immediate skip for both classes (retry and wait disabled).
//
// # Evaluation
//
// [Evaluate] decides in this order:
// stale, unclassified, request-class and unsafe failures stop
// (configuration cannot override the replay-safety gate); so do a failure
// that is only what the agent's own retry notes named (diagnostic_only)
// and one whose preceding note named another class than the error that
// followed (diagnostic_mismatch: a diagnostic counts only when it matches
// the error that follows). Auth and credential failures (auth_required,
// missing_credentials) are never retried or waited for, whatever the
// policy says: on_exhausted decides at once (not_retryable). Otherwise a
// validated future reset hint within max_wait_seconds is waited for once
// per class (or per-code override) per route cycle; retries follow while
// the budget lasts, each delay a full-jitter draw from [0, initial·2ⁿ]
// ([Failure.Jitter], seeded: [NewJitter]; nil draws the whole backoff) and
// never earlier than a validated hint, with reset waiting enabled or not —
// a hint longer than the longest delay the policy allows (its last
// backoff, or max_wait_seconds) ends the retries (hint_beyond_policy),
// unless it is a relative hint (RetryAfter) within the top-level
// "honour_hint_up_to_seconds" (0–3600, default 60, 0: off), which is
// honoured as the delay while the budget lasts, as the vendor SDKs do
// (retry_hint_honoured); then on_exhausted. The wait and its attempt do not consume the retry
// budget. The caller keeps a [Route] per route cycle (per prompt turn) and
// passes it back with each failure.
//
// # Attempt log
//
// [OpenLog] appends one JSON [Record] per line to
// <state dir>/attempts.jsonl (directory 0700, file 0600, O_APPEND, synced
// per record; opened through internal/safefile, so symbolic links are
// refused, and started on a fresh line when a crash tore the last record). Each record carries the classification, the decision, the
// attempt ordinal and a snapshot of the policy, so a later edit of the
// policy never rewrites why an earlier decision was made. [ReadLog] reads
// it back, skipping and reporting each line that is not a whole record (a
// torn or corrupt line never makes the log unreadable).
package policy
