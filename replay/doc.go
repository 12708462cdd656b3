// Package replay owns acp-guard's wire transcripts: the JSONL format, the
// Recorder that writes it from the proxy's event loop, the Reader that parses
// it back (line by line, reporting bad lines and continuing), and Serve, which
// plays a transcript back as a fake agent on stdio. The offline player that
// feeds a transcript through the guard pipeline lives in player.go and uses
// the Reader.
//
// Dependencies point one way:
//
//	cmd/acp-guard ─► replay ─► transport / observers ─► classify ◄─ catalogue
//
// replay must not import cmd. Serve and the Recorder use only the standard
// library; they never decode and re-encode a frame.
//
// # Transcript format
//
// A transcript is UTF-8 text with one JSON object (an event) per line, each
// line ending in "\n". Events appear in the order the proxy's single event
// loop saw them. Fields, in the order the Recorder writes them (readers must
// not depend on the order and must ignore unknown fields):
//
//	t_ms        integer ≥ 0, milliseconds since the recording started.
//	            Required except on "meta" (where it is written as 0).
//	dir         required: "meta" | "c2a" | "a2c" | "stderr" | "exit".
//	code        exit only, required: the agent's exit code (-1 when it
//	            was killed by a signal and no code exists).
//	signal      exit only, optional: the signal that killed the agent
//	            ("SIGKILL", "killed" and "9" are all understood).
//	argv        meta only: the agent command line (redacted).
//	adapter     meta only: the adapter identity, e.g. "cursor-acp".
//	version     meta only: the acp-guard version that recorded.
//	catalogue   meta only: the classifier catalogue version in use.
//	via         frames only: "guard" marks a frame the proxy emitted itself
//	            or rewrote (a rewritten session/prompt response, a retry
//	            notice, the proxy's own requests to the agent). A frame
//	            without via is what the peer actually sent.
//	suppressed  frames only: true marks an original frame that the proxy
//	            did not forward (for example a Cursor control chunk).
//	crlf        frames only: true when the line ended in "\r\n" rather
//	            than "\n".
//	raw         frames only: the line as text when it is not valid JSON.
//	            When msg is also present, raw holds the exact line and msg
//	            the same JSON without its surrounding white space.
//	msg         c2a/a2c: the frame, embedded verbatim: the exact bytes of
//	            the line without its line ending, never re-encoded.
//	            stderr: the line's text as a JSON string.
//
// The optional first event names the agent:
//
//	{"t_ms":0,"dir":"meta","argv":["cursor-agent","acp"],"adapter":"cursor-acp","version":"0.1.0","catalogue":"2026.1"}
//
// Frames in both directions, as they crossed the proxy, before and after
// projection:
//
//	{"t_ms":12,"dir":"c2a","msg":{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}}
//	{"t_ms":40,"dir":"a2c","suppressed":true,"msg":{"jsonrpc":"2.0","method":"session/update","params":{…}}}
//	{"t_ms":41,"dir":"a2c","msg":{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}}
//	{"t_ms":41,"dir":"a2c","via":"guard","msg":{"jsonrpc":"2.0","id":2,"error":{…}}}
//	{"t_ms":50,"dir":"a2c","raw":"panic: oops"}
//	{"t_ms":51,"dir":"stderr","msg":"error: stream closed"}
//	{"t_ms":60,"dir":"exit","code":-1,"signal":"SIGKILL"}
//
// What each side saw follows from the marks: the client received the a2c
// frames that are not suppressed; the agent sent the a2c frames without via;
// the agent received the c2a frames that are not suppressed (the client's,
// and the proxy's own marked via "guard"); the client sent the c2a frames
// without via.
//
// Strings that are not valid UTF-8 (raw lines, stderr) are stored with each
// bad byte replaced by U+FFFD; a frame that is valid JSON is stored byte for
// byte. Secrets are redacted by default (RecorderOptions.Redact): a line whose
// redacted text differs is stored redacted, as msg when it is still valid
// JSON and as raw otherwise.
//
// # Serving
//
// Serve acts as the recorded agent. It walks the agent's view of the
// recording in order: it emits what the agent sent (a2c frames without via,
// suppressed or not; stderr lines; the exit) at the recorded relative times
// scaled by 1/Speed, and before going past a point where the agent received
// a request it waits until the live client has sent the matching request: the
// k-th live request of a method matches the k-th recorded request of that
// method, and the recorded response goes out with the live request's id
// spliced in place of the recorded one (no other byte changes). Likewise it
// waits for the client's response to each agent→client request before going
// past the point where the recorded client answered. Client notifications
// (session/cancel) are consumed and never waited for. A live request with no
// recorded counterpart left gets a -32603 error "replay: client diverged from
// recording: expected X, got Y". The recorded exit ends Serve with the
// recorded code (128+N for a signal N).
//
// Because Serve follows what the agent received, the proxy's own requests
// (a retry's session/prompt, marked via "guard") are requests it waits for:
// a transcript recorded while acp-guard retried is served faithfully behind
// acp-guard with the same policy, which sends those retries again. A client
// that waits for a response the recording shows after one of the client's
// own later requests stalls; the served agent never answers ahead of the
// inputs that preceded the answer in the recording.
package replay
