// Package guard is the pipeline acp-guard runs on every frame: it plugs
// into the relay (transport.Hooks) and, in arrival order on the relay's one
// goroutine, observes each turn (observers), suppresses control chunks,
// classifies failures (classify) when a session/prompt returns, decides
// recovery (policy) behind the replay-safety gate, and executes it: it holds
// the client's request, sends notices, re-sends the cached prompt with the
// proxy's own request id, switches models for fallback, and finally answers
// the client exactly once. The live proxy and the offline replay drive the
// same Guard; only the transport.Output differs.
//
//	cmd/acp-guard → replay → guard → transport
//	                               → observers
//	                               → classify ← catalogue
//	                               → policy
package guard
