// Package fakeprovider is a scriptable stand-in for the model providers that
// real ACP agents call: the OpenAI Responses API, the Anthropic Messages API
// and the Gemini API. It exists so that interop captures and tests can make a
// real agent fail in every way a provider fails, deterministically and
// without network access.
//
// A [Server] listens on 127.0.0.1 only. Every request is matched to a route:
//
//	route                  request
//	responses              POST .../responses                 (OpenAI Responses, SSE when "stream":true)
//	chat                   POST .../chat/completions          (answered 404: not supported)
//	models                 GET  .../models                    (OpenAI model list; Gemini model list)
//	messages               POST .../messages                  (Anthropic Messages, SSE when "stream":true)
//	count_tokens           POST .../messages/count_tokens     (Anthropic)
//	streamGenerateContent  POST .../models/{model}:streamGenerateContent
//	generateContent        POST .../models/{model}:generateContent
//	countTokens            POST .../models/{model}:countTokens
//	other                  anything else (answered 404)
//
// # Scripts
//
// A [Script] maps keys to queues of [Step]s. For each request the server looks
// up the queue "route@model", then "route", then "*", and takes the head
// step; a step answers Times requests (default 1, -1 forever) and is then
// dropped. An empty or missing queue answers with a normal success. The JSON
// form, as read by [ParseScript] and the fakeprovider command:
//
//	{"responses": [
//	   {"times": 2, "status": 429, "headers": {"retry-after": "1"},
//	    "body": {"error": {"type": "rate_limit_exceeded", "message": "slow down"}}},
//	   {"cut": "after_text", "then": "error",
//	    "error": {"type": "response.failed", "response": {"error": {"code": "server_error", "message": "boom"}}}},
//	   {"text": "Hello!"}],
//	 "generateContent@gemini-2.5-flash-lite": [{"times": -1, "status": 503}]}
//
// Step fields:
//
//	times     requests this step answers (0 → 1, -1 → all remaining)
//	delay     wait before sending anything ("2s", or milliseconds as a number)
//	status    HTTP status; with body (a JSON value or a string) or a non-200
//	          status the step answers with that plain response, not a stream
//	headers   extra response headers
//	text      assistant text of a success (default "Hello from the fake provider.")
//	events    send only the first N events of the success stream, then "then"
//	cut       "before_text" or "after_text": a symbolic events count
//	then      what follows a cut stream: "drop" (abort the connection, default),
//	          "end" (close cleanly without the completion event), "error"
//	          (send the error event, then end), "stall" (wait stall_for, then
//	          send the rest of the stream; 0 waits until the client leaves)
//	error     data of the error event; its "type" names the SSE event when
//	          present (OpenAI, Anthropic); Gemini sends it as a data line
//
// # Observability
//
// Each request is logged to the server's log writer as one line
// (method, path, route, model, status, step). GET /_fake/stats returns
// [Stats] as JSON; POST /_fake/script replaces the script; POST
// /_fake/reset clears the counters. The same are available as methods.
package fakeprovider
