// Package acpschema checks JSON-RPC frames against the official ACP JSON
// schema (the npm package @agentclientprotocol/sdk's schema/v1/schema.json,
// draft 2020-12), for the conformance test that drives the built binary
// through every scenario in which acp-guard writes frames of its own.
//
// The schema is another project's and is not committed: scripts/acp-schema.sh
// installs it into .cache/acp-schema and prints its path. Locate finds it
// (ACP_SCHEMA, else the default cache path); with CI=true a missing schema
// is a failure, otherwise a loud skip.
//
// A frame is checked twice: the whole frame against the schema's side
// (its top-level "Agent" or "Client" message, which holds the JSON-RPC
// envelope), then its params, result or error against the one $defs entry
// its method names (session/update → SessionNotification, a session/prompt
// result → PromptResponse, any error → Error …), because the envelope's
// anyOf over every method would accept almost any object.
//
// Only tests import it (internal/archtest checks that).
package acpschema
