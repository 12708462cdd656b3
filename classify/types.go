package classify

import (
	"encoding/json"
	"time"
)

// Source names where a piece of evidence came from.
type Source string

const (
	SourceRPCError     Source = "rpc_error"
	SourceMessageChunk Source = "message_chunk"
	SourceStderr       Source = "stderr"
	SourceExit         Source = "exit"
	SourceHTTP         Source = "http"
)

// Class is the policy input derived from a semantic code.
type Class string

const (
	ClassTransient    Class = "transient"
	ClassHard         Class = "hard"
	ClassRequest      Class = "request"
	ClassUnclassified Class = "unclassified"
)

// Evidence is the envelope the engine classifies. Every field is optional
// except Source; the engine never performs I/O and never reads a clock: Now
// is the time against which timing hints are validated.
type Evidence struct {
	Source     Source            `json:"source"`
	Adapter    string            `json:"adapter,omitempty"` // e.g. "cursor-acp", "codex-acp", "claude-agent-acp", "gemini-cli"
	RPCCode    *int              `json:"rpcCode,omitempty"` // JSON-RPC error code
	Message    string            `json:"message,omitempty"` // JSON-RPC error message, chunk text, or exit summary
	Data       json.RawMessage   `json:"data,omitempty"`    // JSON-RPC error data as sent by the agent
	HTTPStatus int               `json:"httpStatus,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"` // HTTP headers, canonical or lower-case keys
	// Chunk is the turn's error text in message chunks, beside the
	// JSON-RPC error or the exit that ended the turn: evidence of rank 2,
	// below the report (Message, Data, RPCCode, HTTPStatus) and above
	// Stderr (Engine.Classify).
	Chunk      string    `json:"chunk,omitempty"`
	Stderr     []string  `json:"stderr,omitempty"` // stderr lines near the answer, noise left out (already ANSI-stripped)
	ExitCode   *int      `json:"exitCode,omitempty"`
	Signal     string    `json:"signal,omitempty"`
	Phase      string    `json:"phase,omitempty"` // "prompt", "initialize", "session", ...
	Generation int64     `json:"generation,omitempty"`
	Stale      bool      `json:"stale,omitempty"` // evidence is not tied to the current generation
	Now        time.Time `json:"-"`
}

// Verdict is the engine's deterministic answer.
type Verdict struct {
	Code             string         `json:"code"`
	Class            Class          `json:"class"`
	Confidence       string         `json:"confidence"` // high | medium | low
	Scope            string         `json:"scope"`      // provider | account | model | request | agent | unknown
	Rule             string         `json:"rule"`       // stable rule ID, "" when unclassified by no rule
	CatalogueVersion string         `json:"catalogueVersion"`
	RetryAfter       *time.Duration `json:"-"` // validated, positive, relative to Evidence.Now
	ResetAt          *time.Time     `json:"-"` // validated, in the future of Evidence.Now, UTC
	SafeExcerpt      string         `json:"safeExcerpt"`
	Reason           string         `json:"reason,omitempty"`    // why unclassified: no_match | stale | conflict | client_closed
	Conflicts        []string       `json:"conflicts,omitempty"` // rule IDs that disagreed (Reason conflict)
}

// Timing is a verdict's timing hints as the wire carries them — in a
// ProviderError and in `acp-guard classify`'s output: the delay in whole
// milliseconds and the reset instant in RFC 3339, UTC, whole seconds,
// never earlier than the provider said (a fraction rounds up); null when
// the verdict has none. Verdict.Timing is the one encoder of both.
type Timing struct {
	RetryAfterMs *int64  `json:"retryAfterMs"`
	ResetAt      *string `json:"resetAt"`
}

// Timing returns v's timing hints in wire form.
func (v Verdict) Timing() Timing {
	var t Timing
	if v.RetryAfter != nil {
		ms := v.RetryAfter.Milliseconds()
		t.RetryAfterMs = &ms
	}
	if v.ResetAt != nil {
		at := v.ResetAt.UTC()
		if at.Nanosecond() != 0 {
			at = at.Truncate(time.Second).Add(time.Second)
		}
		s := at.Format(time.RFC3339)
		t.ResetAt = &s
	}
	return t
}
