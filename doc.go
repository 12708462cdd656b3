// Package acpguard guards an Agent Client Protocol agent in-process: the
// library behind the acp-guard command, for Go programs (an orchestrator,
// an editor backend) that would otherwise exec an agent and speak ACP to
// it over its stdio.
//
// A guarded session relays every frame between the client and the agent
// byte for byte and, on the way, turns the provider failures agents report
// in their own ways into one structured ProviderError, classifies them,
// recovers by policy only when a turn produced no output and no effect,
// and records the session when asked (the repository's README.md and
// docs/ describe the behaviour; this package is how to run it).
//
// # Running a session
//
// Config holds every option of the command line (the flag each field
// mirrors is named in its comment); its zero value is `acp-guard -- AGENT`
// with no flags. Config.Load reads the policy and catalogue files once and
// checks every value, so that many sessions can start from the result.
//
//   - Run starts an agent command and guards it for a client on Streams
//     (what `acp-guard -- AGENT…` does); it returns when the agent has
//     exited and every client request has been answered exactly once.
//   - RunPipes does the same for an agent the caller runs itself, given
//     the ends of its pipes (AgentPipes): one started another way, or one
//     living in the same process.
//   - Replay plays a recorded transcript offline, on a virtual clock, and
//     reports what the pipeline decided (`acp-guard replay`); Serve plays
//     the recorded agent behind the pipeline for a live client (`acp-guard
//     replay --serve`).
//
// To talk to a guarded agent through the ACP Go SDK, give the session one
// end of two io.Pipes as Streams and the SDK the other ends.
//
// # Events
//
// Config.OnEvent receives the session's typed event stream (Event):
// TurnStarted, FailureClassified, Transition, AttemptSent, AttemptDone,
// NoticeSent, Answered, SilentFlagged, AbnormalStop, LateOutput,
// RecoveryAction, CircuitDecision, CircuitChanged, Stalled,
// AgentIdentified, AgentExited and, with Config.EventFrames,
// FrameObserved — in the order they
// happened, each stamped with the event loop's time, each carrying what
// the guard parsed (a verdict, the agent's error decoded once, the
// decision) so that nothing reads a frame again. It runs on the session's
// event loop and must not block: hand events to a goroutine of your own.
// The decision log, telemetry, OnTurn, OnLate and `replay --json` are
// subscribers of the same stream; with none, no event is built.
//
// # One pipeline
//
// Every session — live, replayed, served, and `classify --transcript` —
// is assembled by one function from one Config: the classification engine
// and policy, the adapter identity, the attempt log, the circuits, the
// stall watchdog, the silent-failure checks, telemetry and the transcript
// recorder. They therefore decide alike. What differs is only the clock
// (a replay's is virtual) and where state lives:
//
//   - The attempt log is kept whenever the policy can schedule work of its
//     own (a retry, a wait, a model switch, a compaction) or turn an empty
//     turn into a failure, or Config.StateDir is named; every such
//     decision is written there before its work starts, and a record that
//     cannot be written stops the turn (state_unwritable).
//   - Circuits live in the state directory for a live session; a replayed
//     or served one keeps them, and its attempt log, in memory unless the
//     Config names a place, so it never touches what live sessions share.
//   - A recorded session decides with the configuration it was recorded
//     with (the transcript's meta event: policy, fallback models, notices,
//     stall timeout, circuits) where the Config leaves it unset, and
//     replays the points where the live proxy was told to stop and where
//     it learned each attempt record's result.
//
// # Stability
//
// The names this package exports — Config and its fields, Load, Run,
// RunPipes, Replay, Serve, Command, Streams, Policy (ParsePolicy,
// LoadPolicy), Catalogue (DefaultCatalogue, LoadCatalogue), ReplayResult,
// ConfigError (its Field names the Config field at fault, never a flag),
// PublishCatalogueOverlay and OverlayStore, the notice channels and
// defaults, and the aliases: TurnReport, Decision, RPCError, Outcome and
// its constants, ProviderError, ExitStatus, Event, the event types and
// the values they carry (package event), and AgentPipes, Result and
// StartError (package transport), with the JSON shapes they carry — are
// the supported API: they change only compatibly (new fields, functions
// and event types; a subscriber ignores the event types it does not
// know). The list of them is testdata/api.golden, which TestExportedAPI
// compares with the package, so a change of the surface is a deliberate
// one; TestSurfaceNamesNoUnstablePackage checks that it names nothing of
// the packages that may change. Transition's state and event names are
// the rows of the recovery table in package guard's documentation, which
// may gain rows.
//
// Package event, a leaf, defines the event and report types once, for
// the guard that builds them and the library that hands them on; it is
// as stable as this package. The other exported names of transport, and
// everything in guard, policy, classify and the rest of the module but
// the transcript format (package replay) and the command line, are the
// implementation's and may change. The observable contracts — what the
// client receives, the policy document, the transcript format — are
// specified in docs/WIRE.md, docs/POLICY.md and in the docs of packages
// policy and replay.
package acpguard
