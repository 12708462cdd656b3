// Package guard is the pipeline acp-guard runs on every frame: it plugs
// into the relay (transport.Hooks) and, in arrival order under the relay's
// lock, observes each turn (observers), suppresses control chunks,
// classifies failures (classify) when a session/prompt returns, decides
// recovery (policy) behind the replay-safety gate, and executes it: it holds
// the client's request, sends notices, re-sends the cached prompt with the
// proxy's own request id, switches models for fallback, and finally answers
// the client exactly once. The live proxy and the offline replay drive the
// same Guard; only the transport.Output differs.
//
// # Parts
//
// Guard is the relay's hooks and nothing else; each frame goes to the
// part it belongs to (guard.go lists them): the machine (machine.go: the
// prompts, their states, the one transition function), recovery
// (recover.go, prompt.go, answer.go, late.go), checks (checks.go and the
// files it names), the work of a state (circuitClient, switcher,
// compactor, watchdog), the held-prompt board and the actions on held
// prompts (held.go, operator.go), what the guard learned about the agent
// (agent.go, rare.go), and the emitter (emit.go, notice.go).
//
// # Concurrency
//
// Hooks run serialized by the relay's one mutex, on whichever goroutine
// read the event (a reader, a timer, a worker reporting back), and must
// not block: the guard does no I/O under that lock. The guard's I/O runs
// on workers (worker.go), one type used three times: the attempt-log
// writer (journal.go), the circuit store's calls (circuit.go) and the
// held-prompt board's writes and watch (held.go). Each is started by its
// first job in the live proxy, runs its jobs in order (records are
// appended in the order they were decided; a prompt's circuit Fail
// reaches the store before its later Acquire; each store call is bounded
// by a timeout that follows the store's measured latency,
// circuit.Config.OpTimeout at least), and posts each result back into
// the event loop through transport.Relay.Poster; Guard.Close runs what is
// queued and ends them (and stops the board's watch, whose goroutine, the
// store's, posts the requests operators write back into the event loop).
// Offline (transport.Virtual) jobs run in line, and a DeferredAttemptLog
// (a replay) completes each record where the recording says the live
// proxy learned its result (journal.go).
//
// Everything armed for a prompt that runs later — a timer (a wait's
// deadline, a parked prompt's next ask, the probe lease's refresh, the
// stall watchdog and its grace period, the board's publish), a worker's
// result (an attempt record written, a circuit's answer, the fallback
// models' circuits), the agent's answer to a model switch or a
// compaction — is armed under the prompt's fence and acts only while the
// fence is live (fence.go): machine.transit arms the fences, so a
// callback from a state the prompt has left is dropped by that one check,
// never by a test of its own. The stall watchdog is a timer per prompt,
// owned by the prompt and disarmed when it is answered.
//
// Successful results are checked for silent failures and abnormal stop
// reasons (silent.go) before they pass: a flag adds
// result._meta.acpGuard.silent or .stop and leaves every other byte.
//
// # Events
//
// Everything the guard sees and decides is emitted as one typed event
// (the types of package event, named in events.go: TurnStarted, FrameObserved, FailureClassified, Transition,
// AttemptSent, AttemptDone, NoticeSent, Answered, SilentFlagged,
// AbnormalStop, LateOutput, RecoveryAction, CircuitDecision,
// CircuitChanged, Stalled, AgentIdentified, AgentExited) to Config.Events, on the event loop, each
// stamped with the loop's time: telemetry, the decision log (eventlog.go),
// `replay --json` and a library's subscriber read this stream. An agent's
// answer is parsed once where it arrives (reply.go); its parsed form
// travels with the failure and the events, and the frame is edited from
// its spans (edit.go). With no subscriber no event is built, and frames
// are emitted only with Config.Frames.
// Before that, an end_turn whose whole text is one error line, or that
// showed nothing but the agent's own retry notes, becomes a failure for any
// adapter (textreport.go; docs/WIRE.md); text for a session after its
// answer and before its next prompt is reported as late output
// (lateoutput.go), never counted in the next turn.
//
// # Recovery state machine
//
// One client session/prompt moves through these states; prompt.state
// holds them, and machine.transit is the only code that changes it. A
// transition not listed here is refused. "record X" writes an attempt-log
// record with outcome X; "then the work" means the work the transition
// schedules (the wait's timer and notice, the model switch) starts only
// once that record is durable, and a record that cannot be written takes
// the state_unwritable edge instead.
//
//	active | retrying --wait--> waiting_for_reset  [record scheduled, then the work]
//	active | retrying --retry--> retry_wait  [record scheduled, then the work]
//	active | retrying --skip--> switching  [record failed, then the work]
//	active | retrying --stop--> action_required  [record stopped]
//	active | retrying --pass--> answered
//	active | retrying --compact--> compacting  [record scheduled, then the work]
//	retrying --succeed--> answered  [record succeeded]
//	waiting_for_reset | retry_wait | parked --due--> retrying
//	switching --switched--> retrying
//	switching --switch_failed--> action_required  [record stopped]
//	compacting --compacted--> retrying
//	compacting --compaction_failed--> action_required  [record stopped]
//	waiting_for_reset | retry_wait | parked | switching | compacting --late_activity--> action_required  [record stopped]
//	waiting_for_reset | retry_wait | parked | switching | compacting --cancel--> answered  [record cancelled]
//	waiting_for_reset | retry_wait | parked | switching | compacting --superseded--> action_required  [record stopped]
//	waiting_for_reset | retry_wait | parked | switching | compacting --state_unwritable--> action_required  [record stopped]
//	waiting_for_reset | retry_wait | parked | switching | compacting --shutting_down--> action_required  [record stopped]
//	active | retrying | waiting_for_reset | retry_wait | parked | switching | compacting | stalled --agent_exit--> action_required  [record stopped]
//	active | retrying | waiting_for_reset | retry_wait | parked | switching | compacting | stalled --session_ended--> answered
//	active | retrying --stall--> stalled
//	stalled --give_up--> action_required  [record stopped]
//	waiting_for_reset | retry_wait | parked | switching --park--> parked
//	waiting_for_reset | retry_wait | parked | switching --probe--> probing
//	waiting_for_reset | retry_wait | parked | switching --circuit_open--> action_required  [record stopped]
//	switching --no_candidate--> action_required  [record stopped]
//	waiting_for_reset | retry_wait | parked --retry_now--> retrying  [record scheduled, then the work]
//	waiting_for_reset | retry_wait | parked --skip_now--> switching  [record scheduled, then the work]
//	waiting_for_reset | retry_wait | parked --stop_now--> action_required  [record stopped]
//	probing --progress--> retrying  [circuit closed]
//	probing --succeed--> answered  [record succeeded; circuit closed]
//	probing --wait--> waiting_for_reset  [record scheduled, then the work; failure reported to the circuit]
//	probing --retry--> retry_wait  [record scheduled, then the work; failure reported to the circuit]
//	probing --skip--> switching  [record failed, then the work; failure reported to the circuit]
//	probing --compact--> compacting  [record scheduled, then the work; failure reported to the circuit]
//	probing --stop--> action_required  [record stopped; failure reported to the circuit]
//	probing --pass--> answered  [lease released]
//	probing --stall--> stalled  [lease released]
//	probing --agent_exit--> action_required  [record stopped; lease released]
//	probing --session_ended--> answered  [lease released]
//
// Events: wait/retry/skip/stop are the policy's decision on a failed
// attempt (stop covers unsafe, unclassified, request-class, exhausted,
// no fallback, a retry that returned nothing, an auth or credential
// failure with on_exhausted stop, a provider hint longer than the policy
// allows, a retry note of the agent's that named another class than the
// error that followed, and a failure that is only what its notes named); pass forwards the
// agent's own answer (a success of the client's attempt, a cancelled turn,
// an older generation); due is the wait's deadline with the generation
// still current; late_activity is any evidence for the session while the
// turn is held (late.go); session_ended is a transcript that ran out;
// shutting_down is a signal to acp-guard while the turn is held (no new
// attempt starts after it: the held prompt gets its failure now).
// compact is a replay-safe context overflow with request.compact_then_retry
// and a compaction command the agent advertised (compact.go): the work is
// acp-guard's own session/prompt with that command, whose updates are the
// compaction turn's and are forwarded marked, while anything else for the
// session (an agent→client request, an unparseable line) is late activity;
// compacted (the compaction turn ended end_turn with updates and no tool
// activity) re-sends the prompt at once, and compaction_failed is every
// other end of the compaction turn.
// With shared circuits (circuit.go), a held prompt about to dispatch — a
// wait's deadline, or a model switch the agent accepted — first asks the
// circuit of its latest failure on the model it now runs: due and
// switched are "the circuit says go" (or there is none); probe is "go as
// the circuit's one probe" — probing is retrying while holding the
// circuit's probe lease, and every row out of probing settles the lease:
// progress (the probe's first provider progress) and succeed close the
// circuit, a failure's report hands the lease on (Fail, for a transient or
// hard failure on the same circuit; otherwise it is released), and every
// other exit releases it. park is "wait on": behind the cooldown, behind
// another session's probe, or in the release jitter after a success —
// the prompt stays held (the gate still applies) and asks again when the
// circuit says. Parking never fails a prompt by itself: only a cooldown's
// wait spends its parking budget (what its own retry schedule has left;
// at least the fallback probe window after a switch), and it keeps every
// retry while parked. circuit_open is "the circuit is open and its
// cooldown ends beyond that budget" (by more than a second, the policy's
// resolution); no_candidate is a skip whose every fallback model left is
// cooling down. The bracket's last item on a row out of probing is what
// it does with the lease (settleLease).
// retry_now, skip_now and stop_now are actions on a held prompt
// (operator.go): the client's _acp-guard/recovery request, or an
// operator's `acp-guard held retry-now|skip|stop` through the held-prompt
// board (held.go). The gate still decides: retry_now and skip_now are
// taken only while the held turn is current and replay-safe, skip_now
// only with a fallback model the failure authorizes (its work is the
// model switch a policy skip starts, circuits included); retry_now's work
// is the retry, dispatched at once without asking the circuit — an
// explicit request overrides the wait, not the gate — and, holding no
// probe lease, its success still closes the circuit of the failure it
// retried (circuit Progress, as a probe's success). Each record names who
// asked (policy.Record.By), and the client gets a notice first; stop_now's
// ProviderError says recovery.reason "stop_now" and recovery.by.
// stall is the opt-in watchdog (stall.go) seeing nothing from the agent
// for the stall timeout: it sends session/cancel, and the prompt is
// stalled for the grace period (a stalled probe's lease is released: the
// probe proves nothing any more); give_up is the grace period's end, or
// the agent's answer after the cancel, which comes too late — either way
// the client gets agent_stalled.
// Entering action_required answers the client with the one ProviderError
// (answer.go: respond is the one path that answers, providerError the one
// builder); agent_exit's answer is written by the relay with ExitData.
package guard
