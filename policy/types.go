package policy

import "time"

// Outcome is what happens when retry and wait are exhausted or disabled.
type Outcome string

const (
	OutcomeSkip Outcome = "skip"
	OutcomeStop Outcome = "stop"
)

// Action is the evaluator's decision.
type Action string

const (
	ActionRetry Action = "retry" // same candidate after Delay
	ActionWait  Action = "wait"  // wait for a validated reset (Deadline), then one attempt
	ActionSkip  Action = "skip"  // switch to the next fallback candidate (the caller turns this into stop when none is left)
	ActionStop  Action = "stop"  // manual recovery: surface the error
	// ActionCompact is the guard's own decision for a context overflow
	// (request.compact_then_retry): the agent's compaction command, then
	// one retry. Evaluate never returns it.
	ActionCompact Action = "compact"
)

// Actions lists every Action (TestActionsListsEveryConstant keeps it
// whole); the guard has one row for each.
var Actions = []Action{ActionRetry, ActionWait, ActionSkip, ActionStop, ActionCompact}

// Retry is a class's same-candidate retry budget. When Enabled, MaxRetries
// is the number of additional attempts (1–10) and InitialIntervalSeconds the
// first delay (1–3600); later delays double. When disabled both are zero.
type Retry struct {
	Enabled                bool `json:"enabled"`
	MaxRetries             int  `json:"max_retries"`
	InitialIntervalSeconds int  `json:"initial_interval_seconds"`
}

// WaitForReset lets a validated future reset or retry-after hint replace the
// next retry delay, at most once per class per route cycle. When Enabled,
// MaxWaitSeconds (1–604800) bounds the hint; when disabled it is zero.
type WaitForReset struct {
	Enabled        bool `json:"enabled"`
	MaxWaitSeconds int  `json:"max_wait_seconds"`
}

// ClassPolicy is the policy for one configurable class (transient or hard).
type ClassPolicy struct {
	Retry        Retry        `json:"retry"`
	WaitForReset WaitForReset `json:"wait_for_reset"`
	OnExhausted  Outcome      `json:"on_exhausted"`
}

// Document is the versioned per-class policy document (version 1).
type Document struct {
	Version   int         `json:"version"`
	Transient ClassPolicy `json:"transient"`
	Hard      ClassPolicy `json:"hard"`
	// Codes are per-code overrides: a failure whose semantic code has an
	// entry here is evaluated with it instead of its class's policy (its
	// retry budget and reset wait are its own). Only codes of the
	// configurable classes; auth and credential codes are never retried.
	Codes          map[string]ClassPolicy `json:"codes,omitempty"`
	FallbackModels []string               `json:"fallback_models,omitempty"`
	Request        Request                `json:"request,omitzero"`
	// EmptyTurn is what an empty end_turn becomes: EmptyTurnPass ("" too)
	// annotates it; EmptyTurnError turns it into an empty_response failure.
	EmptyTurn string `json:"empty_turn,omitempty"`
	// StallTimeoutSeconds arms the stall watchdog (0: off).
	StallTimeoutSeconds int `json:"stall_timeout_seconds,omitempty"`
	// HonourHintUpToSeconds is the longest validated relative hint
	// (Retry-After, "try again in 3s") that is honoured as a retry's
	// delay even when it is longer than the policy's last backoff, as
	// the vendor SDKs do (retry_hint_honoured). nil: 60
	// (DefaultHonourHintUpToSeconds); 0: off (such a hint ends the
	// retries: hint_beyond_policy).
	HonourHintUpToSeconds *int `json:"honour_hint_up_to_seconds,omitempty"`
}

// DefaultHonourHintUpToSeconds is honour_hint_up_to_seconds when the
// document does not set it: the vendor SDKs' bound on a Retry-After they
// honour.
const DefaultHonourHintUpToSeconds = 60

// MaxHonourHintUpToSeconds bounds honour_hint_up_to_seconds (one hour).
const MaxHonourHintUpToSeconds = 3600

// HonourHintUpTo is the longest relative hint honoured beyond the
// policy's last backoff (HonourHintUpToSeconds, default 60 s).
func (d Document) HonourHintUpTo() time.Duration {
	if d.HonourHintUpToSeconds == nil {
		return DefaultHonourHintUpToSeconds * time.Second
	}
	return time.Duration(*d.HonourHintUpToSeconds) * time.Second
}

// Request is the request section. Request-class failures are never
// retried as they are; with CompactThenRetry a context overflow is
// recovered by the agent's compaction command and one retry (default
// false: it stops like the others).
type Request struct {
	CompactThenRetry bool `json:"compact_then_retry"`
}

// EmptyTurn values.
const (
	EmptyTurnPass  = "pass"
	EmptyTurnError = "error"
)

// MaxStallTimeoutSeconds bounds stall_timeout_seconds (one day).
const MaxStallTimeoutSeconds = 86400

// Failure is what the evaluator needs to know about one failed attempt.
type Failure struct {
	Class      string         // "transient" | "hard" | "request" | "unclassified"
	Code       string         // semantic code, for the record
	Stale      bool           // evidence not tied to the current generation
	Safe       bool           // the replay-safety gate passed (no output, no effect, prompt RPC completed, no cancel)
	RetryAfter *time.Duration // validated hint, relative to Now
	ResetAt    *time.Time     // validated hint
	Now        time.Time
	// Diagnostic is the class the agent's own retry note named before
	// the failure ("" when there was none, or it named nothing known): a
	// note counts only when it matches the error that follows,
	// so a different class stops recovery.
	Diagnostic string
	// DiagnosticOnly: the failure is what the agent's retry notes named,
	// with no error after them (the agent may still be retrying): never
	// recovered automatically.
	DiagnosticOnly bool
	// Jitter draws each retry delay (full jitter); nil: the full backoff.
	Jitter Jitter
	// MinDelay is a floor for a jittered retry delay: with shared
	// circuits, the shortest cooldown the failure opens, so a retry is not
	// sent before a circuit it opened could let it through. Zero: none.
	MinDelay time.Duration
}

// Jitter draws a delay uniformly from [0, max] (full jitter), in whole
// milliseconds.
type Jitter func(max time.Duration) time.Duration

// Route is the per-turn (per route cycle) recovery state the caller keeps
// and passes back in; Evaluate returns the updated copy.
type Route struct {
	Retries  map[string]int  // retries used per class
	WaitUsed map[string]bool // reset wait used per class in this route cycle
}

// Decision is the evaluator's answer. Attempt is the 1-based ordinal of the
// retry being scheduled (0 for stop/skip); MaxRetries is the class budget.
type Decision struct {
	Action     Action        `json:"action"`
	Delay      time.Duration `json:"-"`
	DelayMs    int64         `json:"delayMs"`
	Deadline   time.Time     `json:"deadline,omitzero"`
	Attempt    int           `json:"attempt"`
	MaxRetries int           `json:"maxRetries"`
	Class      string        `json:"class"`
	Reason     string        `json:"reason"` // short machine word: "unsafe", "stale", "unclassified", "request_class", "reset_wait", "retry", "exhausted", ...
}
