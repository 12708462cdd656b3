// Package replay owns acp-guard's wire transcripts: the JSONL format, the
// Recorder that writes it from the proxy's event loop, the Reader that parses
// it back (line by line, reporting bad lines and continuing), Serve, which
// plays a transcript back as a fake agent on stdio, and the offline player
// (player.go) that feeds a transcript through a guard pipeline on a
// virtual clock. The pipeline itself is built by the module's root package
// (acpguard), the one place acp-guard's parts are assembled: replay drives
// it but never builds one.
//
// replay imports transport, observers and classify, never guard or
// anything above it (internal/archtest checks it). Serve and the Recorder use
// only the standard library (and internal/safefile, the one way acp-guard
// opens a file it writes); they never decode and re-encode a frame.
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
//	dir         required: "meta" | "c2a" | "a2c" | "stderr" | "exit" |
//	            "stop" | "attempt_log" | "catalogue".
//	code        exit only, required: the agent's exit code (-1 when it
//	            was killed by a signal and no code exists).
//	signal      exit only, optional: the signal that killed the agent
//	            ("SIGKILL", "killed" and "9" are all understood).
//	client_closed exit only, optional: true when the client had closed its
//	            input before the agent exited.
//	start_error exit only, optional: why the agent could not be started
//	            (code 127: not found, 126: not executable).
//	seq         attempt_log only, required: the number of the attempt
//	            record, from 1 in the order the proxy appended them.
//	err         attempt_log only, optional: why the record could not be
//	            written (absent: it was).
//	turn        catalogue only, required: the session/prompt (from 1, in
//	            the order the proxy saw them; 0: before the first) from
//	            which the proxy classified with this catalogue.
//	overlay     catalogue only, optional: the catalogue overlay merged over
//	            the base catalogue (the document itself, a JSON object on
//	            one line; absent: the base alone, an overlay cleared).
//	argv        meta only: the agent command line (redacted).
//	adapter     meta only: the adapter identity, e.g. "cursor-acp".
//	version     meta only: the acp-guard version that recorded.
//	catalogue   meta: the classifier catalogue version in use at the start;
//	            catalogue: the version from its turn on
//	            (<base>+<overlay>).
//	start       meta only, optional: when the recording started (RFC 3339,
//	            UTC); t_ms counts from it.
//	notices     meta only, optional: the retry-notice channel in effect.
//	stall_timeout_ms meta only, optional: the stall watchdog's timeout in
//	            effect (absent: off).
//	circuits    meta only, optional: where the circuits were kept ("file",
//	            "nats", "memory"), "off" when the proxy ran without them
//	            though its policy could recover; absent when it could not.
//	circuit_namespace meta only, optional: the circuits' namespace.
//	attempt_log meta only, optional: where the attempt log was kept ("dir",
//	            "memory"); when present, the transcript holds an
//	            attempt_log event wherever the proxy learned a write's
//	            result.
//	jitter_seed meta only, optional: the seed of the proxy's full jitter
//	            on retry delays (an integer below 2^53); a replay or a
//	            served session draws with it, so its retries fall when the
//	            recorded ones did; absent: no jitter.
//	policy      meta only, optional: the effective policy document the
//	            proxy ran under (a JSON object; omitted parts filled in).
//	            A replay decides with it unless --policy is given.
//	fallback    meta only, optional: the --fallback-models list.
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
// and what the proxy did that is neither peer's: where it learned the
// result of writing an attempt record (it schedules a retry only once the
// record is written) and where it was told to stop (a signal; held prompts
// are answered shutting_down, no attempt of its own starts after it):
//
//	{"t_ms":44,"dir":"attempt_log","seq":1}
//	{"t_ms":45,"dir":"attempt_log","seq":2,"err":"attempt log: state directory: …: not a directory"}
//	{"t_ms":47,"dir":"stop"}
//
// and, with a catalogue overlay (--catalogue-overlay), which catalogue it
// classified with from which turn: the overlay in effect at the start
// (turn 0), and every overlay taken up between turns, with the document
// itself — operator-written rules and fixtures, not provider text — so
// that a replay needs nothing but the transcript: it validates and merges
// each recorded overlay over its own base catalogue and classifies with it
// from the same turn, reaching the same verdicts (a recorded overlay that
// no longer validates over the replay's catalogue is reported and the
// catalogue before it stays):
//
//	{"t_ms":3030,"dir":"catalogue","catalogue":"2026.12.05-1+field-1","turn":2,"overlay":{"version":"field-1","rules":[…],"fixtures":[…]}}
//
// What each side saw follows from the marks: the client received the a2c
// frames that are not suppressed; the agent sent the a2c frames without via;
// the agent received the c2a frames that are not suppressed (the client's,
// and the proxy's own marked via "guard"); the client sent the c2a frames
// without via.
//
// Strings that are not valid UTF-8 (raw lines, stderr) are stored with each
// bad byte replaced by U+FFFD; a frame that is valid JSON is stored byte for
// byte. Secrets, emails and account ids are redacted by default
// (RecorderOptions.Redact, RedactFrame for frames): a line whose
// redacted text differs is stored redacted, as msg when it is still valid
// JSON and as raw otherwise.
//
// # Serving
//
// Serve acts as the recorded agent. `acp-guard replay --serve` runs it
// behind the guard pipeline in one process (acpguard.Serve), so a client
// sees what the live client saw; `--agent-only` serves the agent alone,
// to run behind another acp-guard. It walks the agent's view of the
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
// recorded counterpart left is answered with the last recorded error
// response of its method, when there is one (a failing provider keeps
// failing: a guard's retries of a recorded 529 see the 529 again); else it
// gets a -32603 error "replay: client diverged from recording: expected X,
// got Y". The recorded exit ends Serve with the recorded code (128+N for a
// signal N). An exit marked client_closed (it followed the client's EOF) is
// played only once the live client has closed its input; if a signal ended
// that agent too (the proxy's grace kill of an agent that does not exit on
// EOF), the served agent, like the recorded one, stays until it is stopped
// (ctx ends; as a process: until it is signalled).
//
// Because Serve follows what the agent received, the proxy's own requests
// (a retry's session/prompt, marked via "guard") are requests it waits for:
// a transcript recorded while acp-guard retried is served faithfully behind
// acp-guard with the same policy, which sends those retries again. A client
// that waits for a response the recording shows after one of the client's
// own later requests stalls; the served agent never answers ahead of the
// inputs that preceded the answer in the recording. A served session runs
// in real time: where the live outcome hung on a race (a late frame
// against the write of an attempt record) it may go the other way; the
// offline replay follows the recorded order.
//
// # Offline replay
//
// Play judges a transcript the way the live proxy judged it, with the same
// code: a transport.Relay whose hooks are the Pipeline it is given (the
// guard, as acpguard.Replay assembles it from the recorded configuration),
// writing to a transport.Virtual output whose clock starts at
// PlayOptions.Epoch, else at the meta event's start, else at DefaultEpoch
// (2026-01-01T00:00:00Z). For each event in order the clock is advanced to
// epoch+t_ms — firing due timers (scheduled retries, the stall watchdog)
// in deadline order — and then the event is fed: c2a to Relay.FromClient,
// a2c to Relay.FromAgent (with its "\n" or "\r\n"; a raw line as it was,
// counting as unparseable evidence), stderr to Relay.Stderr, exit to
// Relay.AgentExited, stop to Relay.Stopping, attempt_log to the pipeline's
// AttemptLogged (which completes the write the guard waits for there).
// Frames marked via "guard" are skipped: the replay's relay makes its own,
// and because the request table
// numbers the proxy's requests "acp-guard:N" in order, the agent's recorded
// answers to a retry line up when the replay decides as the recording did.
// When an answer to a proxy request is stamped before the replay's timer
// is due (the two clocks disagree by a millisecond), the next timers fire
// first. When the transcript ends, no remaining timer fires;
// Pipeline.Flush (the guard's) reports the prompts still pending: outcome
// "retried" with the latest decision (and the failure's ProviderError) for
// a prompt whose recovery was under way, outcome "failed" with neither
// stopReason nor error for a prompt the transcript never answered.
//
// The adapter (Identity) is the --adapter flag, else the meta event's
// adapter, else agentInfo.name from the initialize response (the guard
// learns it), else the basename of meta argv[0]. A meta adapter that is
// just that basename (what the live proxy records when it knew nothing
// better) counts as the command, so initialize still decides, as it did
// live.
//
// acpguard.ReplayResult.Turns holds one event.TurnReport per client
// prompt, in the order the turns settled; it is exactly what `acp-guard
// replay --json` prints. A turn's late output (text for its session after
// its answer and before the session's next prompt, event.LateOutput) is
// added to its line as "lateOutput" when that window closes. Result.Client and Result.Agent hold the frames
// the proxy would have written. Result.Errors lists, each naming its line:
//
//   - *LineError, bad input: time going back ("t_ms 5 is earlier than the
//     previous event's 10"), a response whose id answers no pending request
//     (out of order or duplicated), a request reusing the id of a pending
//     one, a meta event after the first, a session/prompt with no response
//     before the transcript ends (and no exit). The line is still played
//     when that is safe (a response to nothing is forwarded, as live).
//   - *Divergence, a note: the agent answers a proxy request this replay
//     did not send, because it runs with another policy, catalogue or
//     adapter than the recording. That line is skipped. (acpguard.Replay
//     adds one on the meta line when the recorded policy is not valid and
//     the default decides instead.)
//
// The Reader's own line errors come first from ReadAll; ErrorsByLine
// merges both lists in line order. `acp-guard replay` prints them as
// FILE:LINE on stderr and exits 1 when any line was bad.
//
// # Golden transcripts
//
// ../testdata/transcripts holds real-agent captures (real/), transcripts
// recorded from the demo agent through the proxy (recorded/; and
// terminal/: one for every way the proxy ends a request, recorded by the
// root package's `go test -run TestTerminalGoldens -record`, which checks
// that each replays to the live client's frames), hand-made edge cases
// (handmade/) and bad input (bad/). Beside each x.jsonl:
// x.expected.jsonl (the --json lines), x.errors.txt (the errors, only when
// there are any), and optionally x.policy.json (--policy) and x.adapter
// (--adapter). TestGolden replays them all; `go test ./replay -run
// TestGolden -update` rewrites the expectations, which are never edited by
// hand.
package replay
