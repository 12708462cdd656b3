// Package observers turns the ordered frames of each prompt turn into
// evidence: per session, the active prompt generation, and per turn what
// the recovery gate needs (assistant output, thoughts, tool activity,
// agent→client effect requests, unparseable lines, cancellation, stderr,
// exit, the stop reason or error). It also hosts the adapters' control-chunk
// observers, such as Cursor's "Error: RetriableError:" projection and
// Copilot's error chunk, which suppress diagnostic chunks and leave a
// pending marker on the turn; for every adapter, the turn's candidate
// error line (report.go: its whole visible text while it may be one error
// line, kept bounded and not counted as output until the guard decides),
// the agents' retry notes (diagnostics: classify.ParseNote, in text before
// any output and on stderr), late output (text after the prompt
// returned), the repeated-text detector (repeat.go: a fixed 64-byte
// opening per turn), the agent's visible retries (Turn.AgentRetries), the
// stderr lines that may be evidence of a turn's failure (noise.go: near the
// answer, StderrWindow; background noise recognised by shape, bounded), and
// the frame count and last frame kind the stall watchdog reads.
//
// Everything here is called from the relay's hooks, which are serialized
// by the relay's one mutex (on whichever goroutine read the event), in
// arrival order, with no I/O and no clock: time is passed in. Nothing here
// starts a goroutine or locks. Evidence is bounded: flags,
// counts and a few short lines, never copies of output.
package observers
