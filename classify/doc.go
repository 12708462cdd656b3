// Package classify turns evidence of a provider failure into a
// deterministic verdict: a stable semantic code, its class (transient,
// hard, request or unclassified), confidence, scope, the rule that decided,
// the catalogue version, validated timing hints and a sanitized excerpt.
//
// It is pure: no I/O and no clock. The time against which timing hints are
// validated comes in Evidence.Now. It imports neither transport,
// catalogue nor replay.
//
// # Engine
//
// Compile validates a Catalogue (rule IDs vendor.signature.vN and unique,
// codes from the fixed registry of codes.go, known adapters and sources, RE2
// regular expressions, at least one positive and one negative fixture per
// rule, every rule reachable, a collision fixture for every declared
// outranks and overridesStatus) and returns an Engine. Engine.Classify
// evaluates rules in tiers — 1 typed structure, 2 exact signatures, 3
// the provider-agnostic phrase table, 4 the HTTP status — and the first
// tier with a matching rule decides, unless a matched rule of any tier
// below the status says another class: two kinds that disagree are a
// conflict (unclassified, reason conflict) unless one declares it outranks
// the other or the other is General (a broad kind, or a typed code that
// only restates a status); a General rule that disagrees with the status
// yields to it (Engine.Classify, decide). Words-only rules do not count
// in prose that only mentions a failure (mention.go). Lint fails a rule
// that could decide another rule's fixture with another class. The status is derived from wherever the evidence carries it
// (status.go: envelope, a JSON-RPC code in 400–599, status fields, the
// text, names that stand for one); JSON and Python-repr bodies embedded in
// text, and bodies escaped inside a JSON string whose quotes the text lost,
// are decoded (view.go, pyrepr.go). Evidence is ranked: the agent's
// report (its JSON-RPC error or exit) before its error text in chunks
// (Evidence.Chunk) before its stderr; a lower rank decides only when
// nothing above it speaks, and otherwise may only refine a phrase or status
// verdict within its class and kind (SameKind), never through the agent's
// own retry notes (retrynote.go). Which stderr lines are evidence at all —
// near the answer, not background noise — the observers decide
// (observers/noise.go). Stale evidence,
// evidence no rule matches and conflicting evidence are unclassified;
// unclassified never authorizes recovery. Input is bounded: at most
// MaxScanBytes of each text field (the most recent stderr), a few embedded
// documents.
//
// A rule applies only to its adapter ("any" for all) and to its evidence
// sources, and all its conditions must hold: JSON-RPC code, HTTP status,
// field matches inside one JSON object of the data or of a body embedded in
// the text, a control-chunk prefix, an RE2 regex behind a literal
// prefilter; any veto regex cancels it. Assistant text reaches the engine
// only as a projection hands it over (a chunk that is an error report).
//
// # Timing hints
//
// timing.go reads Retry-After (delta-seconds, IMF-fixdate, RFC 850,
// asctime), retry-after-ms, OpenAI x-ratelimit-reset-* durations ("6m0s"),
// x-ratelimit-reset epochs, anthropic-ratelimit-*-reset times, Google
// RetryInfo retryDelay, codex resets_at / resets_in_seconds, and prose
// ("try again in 20s", "Please retry in 3.5s", "try again at 5:40 PM",
// "resets 11:10am (Europe/Helsinki)", "regain access on 2026-08-01 at
// 00:00 UTC", RFC 3339). A hint is kept only when it lies strictly after
// Now and at most MaxHint (30 days) later: past, unparseable, negative or
// absurd hints are dropped, never read as "now". Clock times without a
// date mean their next occurrence, in the named IANA zone (tzdata is
// embedded) or else UTC.
//
// # Sanitizing
//
// Three redactors compose one implementation per pattern (sanitize.go):
//
//   - RedactSecrets: credentials only — API keys (OpenAI, Anthropic,
//     Google, xAI), GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_,
//     github_pat_), Slack tokens (xox…), AWS access key ids (AKIA, ASIA)
//     and secret access keys, bearer tokens, JWTs, key=value secrets.
//   - RedactFrame (recorded frames): RedactSecrets plus emails and account
//     ids (org-…, acct_…, proj_…, user-…); session ids, paths and URLs
//     stay so that the transcript replays.
//   - Redact (logs, stderr evidence): RedactFrame's set plus URLs cut to
//     their host, home directories and long opaque ids.
//
// Sanitize (safeExcerpt) strips ANSI escapes and control characters, runs
// Redact, and cuts to MaxExcerpt bytes of valid UTF-8. All run in linear
// time; every shape has true- and false-positive vectors in the tests, and
// FuzzSanitize checks that none survives.
package classify
