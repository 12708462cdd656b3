// Package suite is the interop suite: client → acp-guard → real agent →
// fake provider, for codex-acp, claude-agent-acp and gemini-cli
// (docs/INTEROP.md).
//
// The package itself is a small ACP client over a child's stdio ([Client],
// [Turn]) that the suite drives; its unit tests run it against
// `acp-guard demo-agent` and are part of `go test ./...`. The real-agent
// suite lives in files with the build tag `interop` and runs with
//
//	make interop      (installs the pinned agents, then go test -tags interop)
//
// It needs Node and the agents installed by dev/interop/install.sh in
// $ACP_GUARD_CACHE (default $HOME/.cache/acp-guard-interop); acpx from the
// same folder drives the third-party-client cases. Everything listens on
// 127.0.0.1 only.
//
// It reads ProviderErrors through the library's stable name
// (acpguard.ProviderError) and uses dev/interop/capture's agent launch
// settings; nothing in the proxy imports it.
package suite
