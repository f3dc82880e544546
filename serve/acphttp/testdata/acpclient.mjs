// acpclient.mjs drives acpbridge serve's /acp with the ACP TypeScript
// SDK's own clients (@agentclientprotocol/sdk 2.4.0): createHttpStream
// (Streamable HTTP) or createWebSocketStream (WebSocket, through ws).
//
//   node acpclient.mjs http|ws URL CWD
//
// Client A: initialize, session/new, a prompt whose edit asks permission
// (answered allow), a second session whose slow prompt it cancels,
// session/list. Client B, a
// second connection: session/load of A's session (its conversation
// replayed) and a prompt. It prints one JSON object of what it saw, for
// the Go test (serve/e2e_test.go) to check; any failure exits 1.
//
// For an agent other than the mock, the environment says what to ask:
// ACP_E2E_PROMPT is the first prompt (one that runs a tool the agent asks
// permission for), ACP_E2E_MODE a mode to set on the session first.
import { client } from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket } from "ws";

const [mode, url, cwd] = process.argv.slice(2);

function stream() {
  if (mode === "ws") {
    return createWebSocketStream(url.replace(/^http/, "ws"), { WebSocket });
  }
  return createHttpStream(url);
}

// recorder is a client app that records the updates and permission asks
// it gets, and answers every ask with its allow_once option.
function recorder() {
  const r = { updates: [], asks: [], wake: [] };
  r.app = client({ name: "acpbridge-e2e" })
    .onRequest("session/request_permission", async ({ params }) => {
      r.asks.push(params);
      const option = params.options.find((o) => o.kind === "allow_once") ?? params.options[0];
      return { outcome: { outcome: "selected", optionId: option.optionId } };
    })
    .onNotification("session/update", ({ params }) => {
      r.updates.push(params);
      for (const wake of r.wake.splice(0)) wake();
    });
  r.until = async (what, ok) => {
    const deadline = Date.now() + 15000;
    while (!ok()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => {
        r.wake.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  };
  r.of = (sessionId) => r.updates.filter((u) => u.sessionId === sessionId).map((u) => u.update);
  return r;
}

const text = (updates, kind) =>
  updates.filter((u) => u.sessionUpdate === kind && u.content?.type === "text").map((u) => u.content.text).join("");

const a = recorder();
const seen = await a.app.connectWith(stream(), async (agent) => {
  const init = await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId } = await agent.request("session/new", { cwd, mcpServers: [] });
  if (process.env.ACP_E2E_MODE) {
    await agent.request("session/set_mode", { sessionId, modeId: process.env.ACP_E2E_MODE });
  }
  const first = await agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: process.env.ACP_E2E_PROMPT || "Please think, make a plan, read the README and edit mock.txt." }],
  });
  // A second session, whose slow turn is cancelled once it streams.
  const other = (await agent.request("session/new", { cwd, mcpServers: [] })).sessionId;
  const slow = agent.request("session/prompt", { sessionId: other, prompt: [{ type: "text", text: "slow answer please" }] });
  await a.until("the slow answer", () => a.of(other).some((u) => u.sessionUpdate === "agent_message_chunk"));
  await agent.notify("session/cancel", { sessionId: other });
  const second = await slow;
  const list = await agent.request("session/list", {});
  return {
    agent: init.agentInfo?.name,
    sessionId,
    first: first.stopReason,
    second: second.stopReason,
    asks: a.asks.map((ask) => ask.toolCall?.title ?? ""),
    kinds: [...new Set(a.of(sessionId).map((u) => u.sessionUpdate))],
    answer: text(a.of(sessionId), "agent_message_chunk"),
    listed: list.sessions.map((s) => s.sessionId),
    other,
  };
});

const b = recorder();
const loaded = await b.app.connectWith(stream(), async (agent) => {
  await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  await agent.request("session/load", { sessionId: seen.sessionId, cwd, mcpServers: [] });
  // Over HTTP the replay comes on the session's stream, the answer on the
  // connection's: the replay may still be arriving.
  await b.until("the replay", () => text(b.of(seen.sessionId), "agent_message_chunk").length > 0).catch((e) => { console.error(JSON.stringify(b.updates)); throw e; });
  const replayed = text(b.of(seen.sessionId), "user_message_chunk");
  const before = b.of(seen.sessionId).length;
  const third = await agent.request("session/prompt", { sessionId: seen.sessionId, prompt: [{ type: "text", text: "hello again" }] });
  return { replayed, third: third.stopReason, thirdAnswer: text(b.of(seen.sessionId).slice(before), "agent_message_chunk") };
});

console.log(JSON.stringify({ ...seen, ...loaded }));
