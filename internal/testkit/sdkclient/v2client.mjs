// v2client.mjs drives acpbridge with the ACP TypeScript SDK 2.4.0's
// experimental v2 client: initialize, session/new, a turn whose tool call
// asks permission (allowed), a slow turn it cancels, session/list,
// (auth/login and auth/logout when initialize offered auth methods),
// session/resume replaying from the start, session/close, session/delete.
// Every session/update, permission ask and result is checked against v2's
// schema (the SDK's zod schemas, generated from schema/v2/schema.json). It
// writes what it saw as JSON to $ACP_V2_OUT; any failure exits 1.
//
// The transport is $ACP_V2_TRANSPORT: stdio (the default: acpbridge on
// this process's stdout and stdin), or http or ws, the SDK's own
// Streamable HTTP and WebSocket clients on $ACP_V2_URL (acpbridge serve's
// /acp). For an agent other than the mock, $ACP_V2_PROMPT is the first
// prompt (one whose tool the agent asks permission for), and $ACP_V2_MODE
// a mode to set first in every session that asks (the mode config
// option). With $ACP_V2_CANCEL_ASK set, it also cancels a turn while its
// permission ask waits; with $ACP_V2_CANCEL_TOOL set, a tool call while
// its permission ask waits; with $ACP_V2_BACKGROUND set (the mock only),
// it has a subagent work in the background and cancels it.
import { client, ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import * as z from "./node_modules/@agentclientprotocol/sdk/dist/v2/schema/zod.gen.js";
import { Readable, Writable } from "node:stream";
import { writeFileSync } from "node:fs";
import { WebSocket } from "ws";

const cwd = process.env.ACP_V2_CWD;
const prompt = process.env.ACP_V2_PROMPT || "Please think, read the README and edit mock.txt.";
const check = (schema, what, v) => {
  const r = schema.safeParse(v);
  if (!r.success) throw new Error(`${what} does not match v2's schema: ${JSON.stringify(v)}: ${r.error}`);
  return v;
};

function stream() {
  const url = process.env.ACP_V2_URL;
  switch (process.env.ACP_V2_TRANSPORT || "stdio") {
    case "http":
      return createHttpStream(url);
    case "ws":
      return createWebSocketStream(url.replace(/^http/, "ws"), { WebSocket });
    default:
      return ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
  }
}

const updates = [], asks = [], wake = [], held = [], withdrawn = [];
const woken = () => {
  for (const w of wake.splice(0)) w();
};
let holdAsksOf; // a session whose permission ask is held, to cancel the turn while it waits
const app = client({ name: "acpbridge-v2-test" })
  .onRequest("session/request_permission", async ({ params, signal }) => {
    check(z.zRequestPermissionRequest, "permission ask", params);
    if (params.sessionId === holdAsksOf) {
      // $/cancel_request aborts the signal: the agent withdrew the ask.
      signal?.addEventListener("abort", () => {
        withdrawn.push(params);
        woken();
      });
      return new Promise((resolve) => {
        held.push({ resolve, params });
        woken();
      });
    }
    asks.push(params);
    const option = params.options.find((o) => o.kind === "allow_once") ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onNotification("session/update", ({ params }) => {
    updates.push(check(z.zUpdateSessionNotification, "session/update", params));
    woken();
  });
// until waits for ok, saying on stderr what it waits for (what a hang
// shows).
const until = async (what, ok) => {
  if (!ok()) console.error(`v2client: waiting for ${what}`);
  while (!ok()) await new Promise((resolve) => wake.push(resolve));
};
const of = (sid) => updates.filter((u) => u.sessionId === sid).map((u) => u.update);
// cancellable folds the tool call's capabilities patches: whether it
// advertises cancel now.
const cancellable = (sid, id) => {
  let caps;
  for (const u of of(sid)) {
    if (u.sessionUpdate === "tool_call_update" && u.toolCallId === id && "capabilities" in u) caps = u.capabilities;
  }
  return caps?.cancel != null;
};
const idle = (sid, n) => () => of(sid).filter((u) => u.sessionUpdate === "state_update" && u.state === "idle").length >= n;

const seen = await app.connectWith(stream(), async (agent) => {
  const init = check(z.zInitializeResponse, "initialize", await agent.request("initialize", {
    protocolVersion: 2, info: { name: "acpbridge-v2-test", version: "1" }, capabilities: {},
  }));
  // With auth methods offered: auth/login with the first, auth/logout.
  let auth;
  const method = init.authMethods?.find((m) => m.type === "agent");
  if (method) {
    auth = {
      login: check(z.zLoginAuthResponse, "auth/login", await agent.request("auth/login", { methodId: method.methodId })),
      logout: check(z.zLogoutAuthResponse, "auth/logout", await agent.request("auth/logout", {})),
    };
  }
  // newSession makes a session in $ACP_V2_MODE, where the agent asks.
  const newSession = async () => {
    const { sessionId } = check(z.zNewSessionResponse, "session/new", await agent.request("session/new", { cwd }));
    if (process.env.ACP_V2_MODE) {
      check(z.zSetSessionConfigOptionResponse, "session/set_config_option", await agent.request("session/set_config_option", {
        sessionId, configId: "mode", type: "id", value: process.env.ACP_V2_MODE,
      }));
    }
    return sessionId;
  };
  const sessionId = await newSession();
  const first = check(z.zPromptResponse, "session/prompt", await agent.request("session/prompt", {
    sessionId, prompt: [{ type: "text", text: prompt }],
  }));
  await until("the first turn's end", idle(sessionId, 1));
  let badToolCancel;
  const tool = of(sessionId).find((u) => u.sessionUpdate === "tool_call_update");
  try {
    await agent.request("tool_call/cancel", { sessionId, toolCallId: tool?.toolCallId ?? "none" });
  } catch (e) {
    badToolCancel = e.code;
  }
  const other = (await agent.request("session/new", { cwd })).sessionId;
  await agent.request("session/prompt", { sessionId: other, prompt: [{ type: "text", text: "slow answer please" }] });
  await until("the slow answer", () => of(other).some((u) => u.sessionUpdate === "agent_message_chunk"));
  await agent.notify("session/cancel", { sessionId: other });
  await until("the cancelled turn's end", idle(other, 1));
  // $ACP_V2_CANCEL_ASK: a third session's turn cancelled while its
  // permission ask waits: the agent withdraws the ask ($/cancel_request),
  // which the client answers cancelled, as v2 says (a late answer).
  let askCancelled;
  if (process.env.ACP_V2_CANCEL_ASK) {
    holdAsksOf = await newSession();
    await agent.request("session/prompt", { sessionId: holdAsksOf, prompt: [{ type: "text", text: prompt }] });
    await until("the held ask", () => held.length > 0);
    await agent.notify("session/cancel", { sessionId: holdAsksOf });
    await until("the ask withdrawn", () => withdrawn.length > 0);
    held[0].resolve({ outcome: { outcome: "cancelled" } });
    await until("the turn cancelled while asking", idle(holdAsksOf, 1));
    askCancelled = { updates: of(holdAsksOf), withdrawn: withdrawn.length };
  }
  // $ACP_V2_CANCEL_TOOL: a tool call cancelled while its permission ask
  // waits: the ask is withdrawn, answered cancelled as v2 says (a late
  // answer the agent drops), and the turn goes on to its end.
  let toolCancelled;
  if (process.env.ACP_V2_CANCEL_TOOL) {
    holdAsksOf = await newSession();
    held.length = 0;
    withdrawn.length = 0;
    await agent.request("session/prompt", { sessionId: holdAsksOf, prompt: [{ type: "text", text: prompt }] });
    await until("the held ask", () => held.length > 0);
    const toolCallId = held[0].params.subject?.toolCall?.toolCallId;
    await until("the tool call's cancel capability", () => cancellable(holdAsksOf, toolCallId));
    const result = check(z.zCancelToolCallResponse, "tool_call/cancel", await agent.request("tool_call/cancel", {
      sessionId: holdAsksOf, toolCallId,
    }));
    await until("the ask withdrawn", () => withdrawn.length > 0);
    held[0].resolve({ outcome: { outcome: "cancelled" } });
    await until("the turn's end", idle(holdAsksOf, 1));
    let again;
    try {
      await agent.request("tool_call/cancel", { sessionId: holdAsksOf, toolCallId });
    } catch (e) {
      again = e.code;
    }
    toolCancelled = {
      toolCallId, result, again, updates: of(holdAsksOf), stillCancellable: cancellable(holdAsksOf, toolCallId),
      subjectCancellable: held[0].params.subject?.toolCall?.capabilities?.cancel != null,
    };
  }
  // $ACP_V2_BACKGROUND: a subagent that works on in the background after
  // its turn (the mock's, until it is cancelled): the turn's idle lists
  // it as background work; once it is cancelled alone and ends, a later
  // idle snapshot lists none.
  let background;
  if (process.env.ACP_V2_BACKGROUND) {
    const sid = await newSession();
    await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "delegate background" }] });
    await until("the turn's end", idle(sid, 1));
    const kid = of(sid).find((u) => u.sessionUpdate === "subagent_update")?.sessionId;
    await until("the subagent's message", () =>
      updates.some((u) => u.sessionId === kid && u.update.sessionUpdate === "agent_message_chunk"));
    await agent.notify("session/cancel", { sessionId: kid });
    const emptied = () => of(sid).some((u) => u.sessionUpdate === "state_update" && Array.isArray(u.background) && u.background.length === 0);
    await until("the background subagent's end", emptied);
    background = { sessionId: sid, updates: updates.filter((u) => u.sessionId === sid || u.sessionId.startsWith(sid + ".")) };
  }
  const list = check(z.zListSessionsResponse, "session/list", await agent.request("session/list", {}));
  const before = updates.length;
  const resumed = check(z.zResumeSessionResponse, "session/resume", await agent.request("session/resume", {
    sessionId, cwd, replayFrom: { type: "start" },
  }));
  // The SDK may resolve the result before it has run the handlers of the
  // notifications written before it.
  await until("the state after the replay", () =>
    updates.slice(before).some((u) => u.sessionId === sessionId && u.update.sessionUpdate === "state_update"));
  const replay = updates.slice(before).filter((u) => u.sessionId === sessionId).map((u) => u.update);
  let badCursor;
  try {
    await agent.request("session/resume", { sessionId, cwd, replayFrom: { type: "_nowhere" } });
  } catch (e) {
    badCursor = e.code;
  }
  check(z.zCloseSessionResponse, "session/close", await agent.request("session/close", { sessionId: other }));
  check(z.zDeleteSessionResponse, "session/delete", await agent.request("session/delete", { sessionId: other }));
  const after = check(z.zListSessionsResponse, "session/list", await agent.request("session/list", {}));
  return {
    init, auth, sessionId, other, first, list: list.sessions.map((s) => s.sessionId),
    after: after.sessions.map((s) => s.sessionId), resumed, replay, badCursor, badToolCancel, asks,
    updates: of(sessionId), cancelled: of(other), askCancelled, toolCancelled, background,
  };
});
writeFileSync(process.env.ACP_V2_OUT, JSON.stringify(seen));
process.exit(0);
