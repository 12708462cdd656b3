// Package capture drives one real ACP agent through one prompt turn against a
// fake provider and records the wire as a JSONL transcript in the format of
// package replay:
//
//	{"dir":"meta","argv":[...],"adapter":"codex-acp","scenario":"429"}
//	{"t_ms":N,"dir":"c2a","msg":<frame as sent>}
//	{"t_ms":N,"dir":"a2c","msg":<frame as received>}      (or "raw":"<text>" when not JSON)
//	{"t_ms":N,"dir":"stderr","msg":"<line>"}
//	{"t_ms":N,"dir":"exit","code":N}                       (and "signal":"killed" when killed)
//
// Frames are stored verbatim except for [Normalizer] substitutions of
// machine-specific strings (the temporary home and working directories and
// the fake provider's port), which keep reruns comparable.
//
// The client side is deliberately small: initialize (no fs, no terminal),
// optionally authenticate, session/new in a temporary cwd, one
// session/prompt; session/request_permission is answered by rejecting
// (reject_once, else cancelled), fs/* and terminal/* requests with
// method-not-found. When the scenario deadline passes the client sends
// session/cancel, waits a grace period for the prompt to return, then closes
// stdin and kills the agent's process group.
//
// Dependencies: capture → dev/interop/fakeprovider; nothing in the proxy
// imports this package.
package capture
