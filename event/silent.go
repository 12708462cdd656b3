package event

// Silent kinds, in the order that picks the one reported.
const (
	SilentTruncated = "truncated"
	SilentRepeated  = "repeated"
	SilentEmpty     = "empty"
)

// Silent is result._meta.acpGuard.silent.
type Silent struct {
	Kind     string         `json:"kind"`     // the kind reported: the first of the kinds above that applied
	Evidence SilentEvidence `json:"evidence"` // every kind that applied
}

// SilentEvidence lists every kind that applied, each with its evidence.
type SilentEvidence struct {
	Truncated *TruncatedEvidence `json:"truncated,omitempty"` // the text is cut short of what usage reports
	Repeated  *RepeatedEvidence  `json:"repeated,omitempty"`  // the answer restated its opening
	Empty     *EmptyEvidence     `json:"empty,omitempty"`     // the turn ended with no output
}

// TruncatedEvidence is the usage report that contradicts the streamed text.
type TruncatedEvidence struct {
	OutputTokens int64  `json:"outputTokens"` // the output tokens the usage report counts
	Source       string `json:"source"`       // where the count was read: "usage" or "_meta.quota"
}

// RepeatedEvidence says how often the opening was restated and how long it is.
type RepeatedEvidence struct {
	Times int `json:"times"` // how often the opening was streamed
	Bytes int `json:"bytes"` // the opening's length
}

// EmptyEvidence qualifies an empty end_turn.
type EmptyEvidence struct {
	StopReason   string `json:"stopReason"`             // the result's stop reason
	Cancelled    bool   `json:"cancelled,omitempty"`    // the client had cancelled the turn
	AfterFailure bool   `json:"afterFailure,omitempty"` // the session's previous prompt failed (a stale-turn agent)
	// RetryNotes counts the agent's own retry notes, the turn's only text:
	// diagnostics, not output.
	RetryNotes int `json:"retryNotes,omitempty"`
}

// StopNote is result._meta.acpGuard.stop for an abnormal stop reason.
type StopNote struct {
	Code  string `json:"code"`  // content_refused, max_tokens or max_turn_requests
	Class string `json:"class"` // request: the request must change; never retried
}
