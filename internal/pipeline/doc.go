// Package pipeline puts a guarded session together: the wiring behind the
// library's face (the module's root package, acpguard), which converts
// its Config into Options and hands every kind of session here.
//
// Assemble (assemble.go) is the one place the parts meet — the
// classification engine and the policy settled with a recording's meta
// event (settle), the catalogue overlays of each turn (overlay.go, and
// overlaystore.go for the one published in the circuits' store), the
// stores the session shares (stores.go: circuits, held prompts and
// presence over one kvstore opener), the attempt log (attemptlog.go), the
// transcript tap and its file names (tap.go, tappath.go), telemetry
// (telemetry.go), the presence record (presence.go) and the subscribers
// of the guard's event stream — for the live proxy, the offline replay,
// the served replay and `classify --transcript` alike, so they decide
// alike. The Pipeline it returns runs a session (Run: a live agent, or
// the recorded one ServeAgent plays, serve.go) or plays a recording
// offline (Play), and closes what it opened.
//
// Nothing here is part of the library's stable API: Options mirrors the
// library's Config field by field, and a FieldError names a field of it,
// which the library turns into its ConfigError.
package pipeline
