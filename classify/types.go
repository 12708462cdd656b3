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
	Stderr     []string          `json:"stderr,omitempty"`  // stderr lines seen during the turn (already ANSI-stripped)
	ExitCode   *int              `json:"exitCode,omitempty"`
	Signal     string            `json:"signal,omitempty"`
	Phase      string            `json:"phase,omitempty"` // "prompt", "initialize", "session", ...
	Generation int64             `json:"generation,omitempty"`
	Stale      bool              `json:"stale,omitempty"` // evidence is not tied to the current generation
	Now        time.Time         `json:"-"`
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
	Reason           string         `json:"reason,omitempty"`    // why unclassified: no_match | stale | conflict
	Conflicts        []string       `json:"conflicts,omitempty"` // rule IDs that disagreed (Reason conflict)
}
