// Package catalogue holds acp-guard's versioned classification rules as
// data, with the fixtures that prove them, and builds classify engines
// from them.
//
// The embedded catalogue is catalogue.json (its version), rules/*.json (one
// JSON array of rules per file: a provider's typed codes, an agent's
// signatures, the phrase table 12-phrase.json, the status table
// 13-status.json, the codes seen across vendors 14-codes.json, typed codes
// read as words and the kinds learned from holdout7 15-words.json, the
// boundaries between kinds learned from holdout9 16-boundaries.json, the
// mechanisms learned from holdout11 18-mechanism.json and 20-learn11.json,
// the kinds learned from holdout12, holdout13a and holdout13b
// 19-learn12.json, 22-learn13a.json and 23-learn13b.json, the mechanisms
// learned from holdout14a and holdout14b 24-learn14.json, the kinds
// learned from holdout15a, holdout15b and holdout15b2 25-learn15.json, the
// failure kinds in eight other languages 26-lang.json, the kinds learned
// from holdout17a and holdout17b 27-learn17.json, the kinds learned from
// holdout18a and holdout18b 28-learn18.json, and from holdout19a and
// holdout19b 29-learn19.json, from holdout20a and holdout20b
// 30-learn20.json, from holdout21a and holdout21b 31-learn21.json, from
// holdout22a and holdout22b 32-learn22.json, from holdout23a and
// holdout23b 33-learn23.json, providers'
// documented error tables 21-docs.json; files in name order, which is the
// order of rules within a tier) and fixtures/*.json (one JSON array of
// fixtures per file).
// Default returns its engine; Load reads an operator-reviewed file for
// --catalogue FILE, which must compile and pass its own fixtures before it
// is used. docs/CATALOGUE.md explains the layers and how to add a
// provider.
//
// An overlay (overlay.go; --catalogue-overlay, `acp-guard catalogue
// publish`) is a document of the same format that adds rules or replaces
// embedded ones by id: Merge puts it over a base catalogue, MergeOverlay
// validates the result before a running proxy uses it, and its version
// is "<base>+<overlay>" (docs/CATALOGUE.md, "The field loop").
//
// # File format
//
// An operator's catalogue file is one JSON document (`acp-guard catalogue
// export` prints the embedded one in this form; a rules/*.json file is the
// "rules" array alone):
//
//	{"version": "2026.11.29-1",
//	 "rules": [{
//	   "id": "anthropic.overloaded_error.v1",   // vendor.signature.vN, never reused
//	   "tier": 1,                               // 1 typed structure, 2 exact signature, 3 phrase (ordered), 4 status (ordered)
//	   "adapter": "any",                        // or codex-acp, claude-agent-acp, gemini-cli, cursor-acp
//	   "sources": ["rpc_error", "stderr", "exit", "http"],
//	   "match": {                               // all present conditions must hold
//	     "rpcCode": -32603,                     // JSON-RPC error code
//	     "httpStatus": [529],                   // the status derived from the evidence is one of
//	     "fields": [                            // all within one JSON object of the data or an embedded body
//	       {"path": "type", "values": ["error"]},
//	       {"path": "error.type", "values": ["overloaded_error"]},
//	       {"path": "error.message", "regex": "(?i)overloaded"},
//	       {"path": "codex_error_info|codexErrorInfo"}          // alternatives; no values: must exist
//	     ],
//	     "prefix": {"prefix": "Error: RetriableError:", "maxSuffixBytes": 256},
//	     "literal": "overloaded",               // case-insensitive prefilter for regex
//	     "regex": "(?i)\\bAPI Error: 529\\b",   // RE2
//	     "in": ["message", "data", "stderr"]    // text the regex, literal and vetoes read (default all)
//	   },
//	   "veto": ["(?i)context canceled"],        // RE2; any hit cancels the rule
//	   "code": "provider_overloaded",           // the class follows from the code
//	   "confidence": "high",                    // high | medium
//	   "scope": "provider",                     // provider | account | model | request | agent | network
//	   "timing": ["headers", "json", "text"],   // extractors, in order; also "claude_epoch"
//	   "note": "where the signature comes from",
//	   "outranks": ["anthropic.rate_limit_error.v1"], // rules (of any tier but the status tier) this one is more specific than
//	   "general": true,                         // a broad kind: any specific rule of another class refines it, and so does a disagreeing status
//	   "overridesStatus": [429]}],              // statuses whose class this rule may change
//	 "fixtures": [{
//	   "name": "anthropic.overloaded_error.v1 +1",
//	   "rule": "anthropic.overloaded_error.v1",
//	   "match": true,                           // false: the rule must not match
//	   "code": "unclassified",                  // optional: the verdict's code must be this
//	   "now": "2026-11-29T12:00:00Z",           // optional pinned clock (this is the default)
//	   "evidence": {"source": "http", "httpStatus": 529, "data": {…}},
//	   "retryAfterMs": 20000,                   // optional timing expectations
//	   "resetAt": "2026-11-29T12:00:30Z",
//	   "transcript": "testdata/transcripts/real/claude/overloaded.jsonl"}]}
//
// A positive fixture passes when its rule classifies it and, in tiers 1
// and 2, no other rule of the same rank (tier, then adapter-scoped before
// "any") matches it unless the rule declares it outranks that rule (the
// collision test; each declaration needs such a collision fixture); in the
// ordered tiers 3 and 4 the first matching rule wins among rules of one
// class. In every tier, a matched rule of another class that is neither
// outranked nor general makes the evidence a conflict, and Lint reports
// it by name against the fixture (docs/CATALOGUE.md "Precedence"). Each overridesStatus
// entry needs a positive fixture whose evidence carries that status. A
// negative fixture passes when its rule does not match it (and, with
// "code", when the verdict has that code). See docs/CATALOGUE.md for adding
// a rule.
package catalogue
