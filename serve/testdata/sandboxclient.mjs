// sandboxclient.mjs drives acpbridge serve's /v1 with sandbox-agent's own
// TypeScript SDK (npm sandbox-agent 0.4.2, on acp-http-client 0.4.2), as an
// app written for the sandbox-agent daemon does.
//
//   node sandboxclient.mjs BASE_URL TOKEN CWD
//
// Client A: SandboxAgent.connect, listAgents, createSession({agent:
// "mock"}), a prompt whose edit asks permission (answered "once" through
// onPermissionRequest and respondPermission) with its events streamed to
// onEvent, _sandboxagent/session/list_models, listSessions. Client B
// (another SandboxAgent sharing A's session records, as an app restarted
// with a persist driver): resumeSession (the SDK's own: a new session with
// the history replayed into the next prompt) and a prompt, session/list
// through rawSend, then session/load of A's agent session on B's
// connection (the SDK's ACP client; its Session API has no load) and a
// prompt there, destroySession. Both dispose. It prints one JSON object of
// what it saw, for the Go test (serve/sandbox_e2e_test.go) to check; any
// failure exits 1.
//
// For an agent other than the mock, the environment says which and what
// to ask: SANDBOX_E2E_AGENT, SANDBOX_E2E_PROMPT (a first prompt that runs
// a tool the agent asks permission for) and SANDBOX_E2E_MODE (the
// session's mode).
import { InMemorySessionPersistDriver, SandboxAgent } from "sandbox-agent";

const [baseUrl, token, cwd] = process.argv.slice(2);
const agent = process.env.SANDBOX_E2E_AGENT || "mock";
const mode = process.env.SANDBOX_E2E_MODE || undefined;
const out = {};

// watch records a session's events as the SDK hands them to onEvent.
function watch(session) {
  const w = { kinds: [], text: "", agentEvents: 0 };
  session.onEvent((e) => {
    const p = e.payload;
    if (e.sender !== "agent" || p.method !== "session/update") return;
    w.agentEvents++;
    const u = p.params.update;
    w.kinds.push(u.sessionUpdate);
    if (u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text") w.text += u.content.text;
  });
  return w;
}

const persist = new InMemorySessionPersistDriver();
const a = await SandboxAgent.connect({ baseUrl, token, persist });
out.agents = (await a.listAgents()).agents.map((x) => x.id);
out.health = (await a.getHealth()).status;

const s = await a.createSession({ agent, cwd, mode });
out.sessionId = s.id;
out.agentSessionId = s.agentSessionId;
out.configIds = (s.toRecord().configOptions ?? []).map((o) => o.id);
const w = watch(s);
out.asks = [];
s.onPermissionRequest((req) => {
  out.asks.push({ title: req.toolCall?.title ?? "", replies: req.availableReplies });
  s.respondPermission(req.id, "once").catch((err) => {
    out.respondError = String(err);
  });
});
const first = await s.prompt([{ type: "text", text: process.env.SANDBOX_E2E_PROMPT || "Please think, read the README and edit mock.txt" }]);
out.first = first.stopReason;
out.eventsAtAnswer = w.agentEvents;
await new Promise((resolve) => setTimeout(resolve, 200)); // listeners run after the answer's own
out.kinds = [...new Set(w.kinds)];
out.answer = w.text;
const models = await s.rawSend("_sandboxagent/session/list_models");
out.models = models.availableModels.map((m) => m.modelId);
out.currentModel = models.currentModelId;
out.listed = (await a.listSessions()).items.map((x) => x.id);

const b = await SandboxAgent.connect({ baseUrl, token, persist });
const resumed = await b.resumeSession(s.id);
out.resumedAgentSessionId = resumed.agentSessionId;
const w2 = watch(resumed);
// The replayed history names the edit, and the mock acts on the words of
// its whole prompt: it asks again.
resumed.onPermissionRequest((req) => resumed.respondPermission(req.id, "once"));
const again = await resumed.prompt([{ type: "text", text: "hello again" }]);
out.again = again.stopReason;
await new Promise((resolve) => setTimeout(resolve, 200));
out.againAnswer = w2.text;
const list = await resumed.rawSend("session/list", {});
out.bridgeListed = list.sessions.map((x) => x.sessionId);

const live = await b.getLiveConnection(agent);
const loaded = await live.acp.loadSession({ sessionId: s.agentSessionId, cwd, mcpServers: [] });
out.loadedConfigIds = (loaded.configOptions ?? []).map((o) => o.id);
const afterLoad = await live.acp.prompt({ sessionId: s.agentSessionId, prompt: [{ type: "text", text: "after the load" }] });
out.afterLoad = afterLoad.stopReason;

const destroyed = await b.destroySession(s.id);
out.destroyed = typeof destroyed.destroyedAt === "number";
await a.dispose();
await b.dispose();
console.log(JSON.stringify(out));
