// orchestrator.mjs — launch an ACP agent through acp-guard and run one
// prompt, with nothing but Node's standard library.
//
//   node orchestrator.mjs [acp-guard flags] -- AGENT [ARGS...]
//   e.g. node orchestrator.mjs --policy policy.json -- codex-acp
//
// Prints the assistant text, acp-guard's retry notices, and the outcome;
// on a failed turn it prints data.providerError (code, class, replaySafe).
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

const guard = process.env.ACP_GUARD || "acp-guard";
const child = spawn(guard, process.argv.slice(2), { stdio: ["pipe", "pipe", "inherit"] });
let nextId = 0;
const waiting = new Map();
const call = (method, params) =>
  new Promise((resolve) => {
    const id = nextId++;
    waiting.set(id, resolve);
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  });

child.on("exit", (code) => {
  for (const resolve of waiting.values()) resolve({ error: { message: `acp-guard exited (${code})` } });
  waiting.clear();
});

createInterface({ input: child.stdout }).on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.method === "session/update") {
    const u = msg.params.update;
    const retry = u._meta?.acpGuard?.retry;
    if (retry) console.error(`[acp-guard] ${retry.action} ${retry.code}/${retry.class} in ${retry.delayMs} ms`);
    else if (u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text") process.stdout.write(u.content.text);
  } else if (msg.method && msg.id !== undefined) {
    // No fs/terminal capability advertised; refuse permission requests.
    const result = msg.method === "session/request_permission" ? { outcome: { outcome: "cancelled" } } : undefined;
    child.stdin.write(JSON.stringify(result ? { jsonrpc: "2.0", id: msg.id, result }
      : { jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "Method not found" } }) + "\n");
  } else if (waiting.has(msg.id)) {
    waiting.get(msg.id)(msg);
    waiting.delete(msg.id);
  }
});

const init = await call("initialize", { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } });
if (init.error) throw new Error(init.error.message);
const session = await call("session/new", { cwd: process.cwd(), mcpServers: [] });
if (session.error) throw new Error(session.error.message);
const turn = await call("session/prompt", { sessionId: session.result.sessionId, prompt: [{ type: "text", text: "Say hello" }] });
if (turn.error) {
  const pe = turn.error.data?.providerError;
  console.log(`\nfailed: ${turn.error.message}` + (pe ? ` — ${pe.code}/${pe.class}, replaySafe=${pe.replaySafe}` : ""));
  process.exitCode = 1;
} else {
  console.log(`\n${turn.result.stopReason}`);
}
child.stdin.end();
