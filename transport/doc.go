// Package transport is acp-guard's stdio relay: framing (lines.go),
// frames and directions (msg.go), the request table (requests.go), the
// serialized state machine between client and agent (relay.go) with what
// plugs into it (hooks.go: Hooks, Ctl, Output, Tap), what a hook may do
// through it (ctl.go), its exactly-once answers (answers.go), the answers
// owed when the agent is gone (exit.go), lines that are not whole frames
// (cutoff.go) and its statistics (counts.go); the agent's process
// (child.go), the event loop that ties pipes, timers and signals to the
// relay (loop.go, shutdown.go, reaper.go), sessions that end before the
// agent runs (early.go) and the writers (writer.go). Observation,
// classification and recovery plug in through Hooks; what transport may
// import is checked by internal/archtest (ARCHITECTURE.md draws the map).
//
// # Frames
//
// A frame is one line. Bytes pass unchanged; the exceptions are written
// down where they happen: a response whose id the peer spelled differently
// from its request (2.0 for 2) gets the request's id bytes back
// (Relay.withRequestID); the last line of a stream that ends without a
// newline is forwarded with one when it is a complete JSON object and
// never forwarded when it is a fragment (Relay.lastLine), so every frame
// acp-guard writes starts on a fresh line. Request ids are compared by
// value (KeyOf). Frames acp-guard writes of its own leave through one
// place (Relay.emit), which makes them valid UTF-8.
//
// # Answers
//
// Each request gets at most one answer, in both directions, and no answer
// reaches a peer that it did not ask for: a second answer, or one to an id
// never sent, is dropped, counted, logged and recorded (answers.go).
//
// # Hooks
//
// Hook calls, Ctl calls and timer callbacks are serialized by one mutex,
// the loop's (loop.mu): one at a time, each stream's events in the order
// they were read, on whichever goroutine produced the event. A hook must
// not block: no I/O, no waiting — what it writes is queued and written
// after the lock is released.
//
// # The fast path
//
// An agent batch of notifications and requests that the hooks' PassThrough
// (PassHooks) accepts is queued for the client by the agent's stdout
// reader without the loop's lock, and written by it (fast.go). The lane,
// an atomic word, keeps the reader's section and the events apart: the
// reader only tries to enter, and each event closes the lane after taking
// the lock and, before anything of its own, shows the hooks the frames the
// fast path wrote (AgentMsg, in read order, at their read's stamp). What
// reaches the client, and what the hooks see, is then exactly what the
// ordinary road gives when the reader handles the batch just before that
// event. PassThrough runs in the lane, serialized with every hook call.
//
// # Time
//
// One time per event: the loop stamps each event once, under its lock,
// and every Ctl.Now during the event returns that stamp, so a decision,
// the circuit operation it reports, the timer it arms and the record it
// writes agree however slowly the machine runs between them. A delay
// passed to Ctl.After counts from the arming event's stamp, and the
// timer's own event is stamped no earlier than that deadline (by the
// monotonic and the wall reading): a deadline computed as stamp + d is due
// when the timer for d fires. Stamps never go back. The offline Virtual
// output keeps time the same way.
//
// # Goroutines
//
// Run starts every goroutine below; none outlives the process.
//
//   - Client reader (readLines on Options.Stdin): started by Run; exits at
//     the client's EOF or a read error. Nobody waits for it — it may stay
//     blocked on a stdin that never closes, and the process exits under it.
//   - Agent stdout reader (readLines on the agent's stdout, through a
//     watchedReader so the drain period can count from the last byte
//     read): started by Run; exits at EOF or when Run closes the pipe at
//     shutdown. Run waits for it (readers WaitGroup, bounded by a second).
//     On the fast path it queues and writes pass-through batches itself,
//     in the lane (fast.go).
//   - Agent stderr reader (loop.readStderr): started by Run; copies stderr
//     to Options.Stderr and hands lines to the stderr forwarder without
//     blocking. Exits at EOF or when Run closes the pipe; Run waits for it.
//   - Stderr forwarder: started by Run; turns buffered stderr lines into
//     events; exits when the stderr reader closes the channel. Run waits.
//   - Waiter (child.wait): started by Run; exits when the agent does, after
//     handing the exit event to the loop. Not waited for: the exit event is.
//   - Signal watcher: started by Run; turns Options.Signals and context
//     cancellation into events; exits when Run closes done.
//   - Orphan reaper (reapOrphans, only with Options.Subreaper): started by
//     Run; reaps exited orphans on SIGCHLD; exits when Run closes done.
//   - Timers (time.AfterFunc in loop.Schedule): each fires once on its own
//     goroutine and handles one event; Run stops the pending ones at the
//     end; a timer that fires after the session is over finds it over.
//   - Kicked drainers (writer.kick): started when a reader or the signal
//     watcher leaves output for a peer it must not block on; each writes
//     that writer's queue out and exits when it is empty (or abandoned,
//     blocked on a peer that never reads, when the process exits).
//   - Final client drain: started by Run after the session is over to write
//     the last answers; Run waits for the writer to go idle and gives up
//     when the client has read nothing for the grace period (the
//     goroutine is then abandoned, blocked on a client that never reads).
//
// With Options.Agent (AgentPipes: an agent the caller runs) nothing is
// started: the readers read the caller's pipes, the waiter calls
// AgentPipes.Wait (without one, it waits for the stdout reader's EOF),
// signals and the grace escalation go through AgentPipes.Signal, and no
// orphan reaper runs.
//
// The goroutine that handled an event writes what it produced outside the
// lock (writer.drain); one drainer per writer at a time, so order holds.
//
// # Ending a session
//
// A stop signal waiting when Run begins (one that came while acp-guard
// parsed flags or loaded its configuration) means the agent is never
// started: the requests the client already sent — the bytes waiting on its
// input — are answered, and the exit code is 128+N (early.go).
//
// The session is over when the agent has exited and its stdout and stderr
// reached EOF — or the drain period passed with the stdout reader idle (a
// grandchild holding the pipe). Then every pending client request is
// answered exactly once. Before that: the client's EOF closes the agent's
// stdin and, when the agent is idle (Relay.Idle: it has answered a client
// request and owes no answer — no client request it has not answered, no
// request of the proxy's own), sends SIGTERM at once — the client expects
// nothing more, and agents such as codex-acp do not exit on stdin EOF —
// else, once the agent has been quiet for the grace period, SIGTERM;
// SIGKILL after another grace period; a signal to acp-guard is forwarded
// once to the agent's process group, stops the proxy's own requests, and
// escalates the same way; an agent that closes its stdout but stays has its
// pending requests answered (ExitStatus.OutputClosed) and is terminated by
// the same escalation. If acp-guard is killed outright, the kernel kills
// the agent (parent-death signal SIGKILL).
package transport
