package transport

// Counts are relay statistics.
type Counts struct {
	ClientFrames, AgentFrames uint64
	InvalidFromClient         uint64
	InvalidFromAgent          uint64
	OversizeFromClient        uint64
	OversizeFromAgent         uint64
	// Fragments: a stream's last line, cut off without its newline and
	// not a complete frame (never forwarded).
	FragmentsFromClient, FragmentsFromAgent uint64
	// DuplicateProxyAnswers counts agent responses to proxy requests
	// that were no longer pending (dropped).
	DuplicateProxyAnswers uint64
	// Answers nobody was owed, dropped: a second answer to a
	// request already answered, or one to an id never sent or no longer
	// pending — the agent's to client requests, the client's to agent
	// requests.
	DuplicateAnswersFromAgent, StrayAnswersFromAgent   uint64
	DuplicateAnswersFromClient, StrayAnswersFromClient uint64
	// IDsRestored counts responses forwarded with the id bytes of their
	// request because the peer spelled the id differently (2.0 for 2).
	IDsRestored                  uint64
	Rewritten, Injected, Dropped uint64
	// Passed counts agent frames written on the fast path (before the
	// hooks saw them); PassMisjudged, those of them a hook would not have
	// forwarded after all (a broken PassThrough; logged).
	Passed, PassMisjudged uint64
	// StderrDropped counts agent stderr lines that reached our stderr but
	// not the evidence, because the loop was busy (set by Run).
	StderrDropped uint64
}
