// unstable.mjs is an ACP client on @agentclientprotocol/sdk 2.4.0's
// unstable v1 entry point, over its own stdin and stdout (ndJsonStream),
// opted into every client capability of the v1 unstable schema. Every
// message the bridge sends it is checked against the SDK's own zod
// schemas (the response schema of the method it answers, the
// notification and request schemas), strictly: a failure is reported,
// not salvaged.
//
// What it does is in ACP_SDK_PLAN (JSON): {cwd, dirs, systemPrompt,
// prompts: [text…]}: initialize, session/new with the directories and
// the system prompt, each prompt in turn (every permission ask answered
// with its allow option), session/list, then session/load of the session
// (its replay recorded). It writes one JSON object of what it saw to the
// file ACP_SDK_OUT (its stdout is the connection).
import { writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk/unstable";
import * as z from "./node_modules/@agentclientprotocol/sdk/dist/v1/unstable/schema/zod.gen.js";

const plan = JSON.parse(process.env.ACP_SDK_PLAN);
const invalid = [];
const pending = new Map(); // request id → method
const responses = {
  initialize: z.zInitializeResponse,
  "session/new": z.zNewSessionResponse,
  "session/load": z.zLoadSessionResponse,
  "session/list": z.zListSessionsResponse,
  "session/prompt": z.zPromptResponse,
};
const inbound = {
  "session/update": z.zSessionNotification,
  "session/request_permission": z.zRequestPermissionRequest,
};

function check(what, schema, value) {
  const r = schema.safeParse(value);
  if (!r.success) invalid.push({ what, value, error: r.error.message });
}

// checked taps a stream of JSON-RPC messages: those going out name the
// methods their answers are checked against.
function tap(stream) {
  const readable = stream.readable.pipeThrough(new TransformStream({
    transform(msg, out) {
      if (msg.method && inbound[msg.method]) check(msg.method, inbound[msg.method], msg.params);
      if (!msg.method && "id" in msg && pending.has(msg.id)) {
        const method = pending.get(msg.id);
        pending.delete(msg.id);
        if (msg.result !== undefined && responses[method]) check(method + " answer", responses[method], msg.result);
      }
      out.enqueue(msg);
    },
  }));
  const writable = new WritableStream({
    async write(msg) {
      if (msg.method && "id" in msg) pending.set(msg.id, msg.method);
      const w = stream.writable.getWriter();
      try { await w.write(msg); } finally { w.releaseLock(); }
    },
  });
  return { readable, writable };
}

const stream = tap(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
const updates = [];
const asks = [];
const app = client({ name: "acpbridge-sdk-unstable" })
  .onRequest("session/request_permission", async ({ params }) => {
    asks.push(params);
    const option = params.options.find((o) => o.kind === "allow_once") ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onNotification("session/update", ({ params }) => { updates.push(params); });

const capabilities = {
  session: { notices: {}, compaction: {} },
  plan: {},
  subagents: {},
  elicitation: { form: {}, url: {} },
  auth: { terminal: true },
};

const seen = await app.connectWith(stream, async (agent) => {
  const init = await agent.request("initialize", { protocolVersion: 1, clientCapabilities: capabilities });
  const made = await agent.request("session/new", {
    cwd: plan.cwd, additionalDirectories: plan.dirs, mcpServers: [],
    systemPrompt: { mode: plan.mode, content: [{ type: "text", text: plan.systemPrompt }] },
  });
  const stops = [];
  for (const text of plan.prompts) {
    stops.push((await agent.request("session/prompt", { sessionId: made.sessionId, prompt: [{ type: "text", text }] })).stopReason);
  }
  const live = updates.length;
  const list = await agent.request("session/list", {});
  await agent.request("session/load", { sessionId: made.sessionId, cwd: plan.cwd, additionalDirectories: plan.dirs, mcpServers: [] });
  return {
    capabilities: init.agentCapabilities,
    sessionId: made.sessionId,
    stops,
    updates: updates.slice(0, live).map((u) => u.update),
    replay: updates.slice(live).map((u) => u.update),
    asks: asks.length,
    listed: list.sessions.find((s) => s.sessionId === made.sessionId) ?? null,
  };
});

writeFileSync(process.env.ACP_SDK_OUT, JSON.stringify({ ...seen, invalid }));
process.exit(0);
