// real runs a turn of a real agent CLI (on its fake model) through one web
// edge with the edge's own client library: WEB_EDGE is aisdk (the AI SDK's
// parseJsonEventStream with uiMessageChunkSchema, readUIMessageStream and
// validateUIMessages) or agui (AG-UI's HttpAgent, with verifyEvents and
// the schemas); WEB_PROMPT makes the agent run a command it asks
// permission for, in mode WEB_MODE if set. The ask is approved, and the
// rest of the turn must bring the command's output and the answer.
import { check, getJSON, headers, run, url } from "./lib.mjs";

const prompt = process.env.WEB_PROMPT;
const mode = process.env.WEB_MODE || undefined;

async function aisdk() {
  const { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema, validateUIMessages } = await import("ai");
  const id = "real-" + Date.now();
  const send = async (messages) => {
    const r = await fetch(url + "/api/chat", {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ id, mode, messages }),
    });
    check(r.ok, `POST /api/chat: ${r.status}`, await r.clone().text());
    return r;
  };
  let chunks = [];
  const read = async (resp, message) => {
    chunks = [];
    const stream = parseJsonEventStream({ stream: resp.body, schema: uiMessageChunkSchema }).pipeThrough(
      new TransformStream({
        transform(part, c) {
          if (!part.success) throw new Error("uiMessageChunkSchema rejected a chunk: " + part.error + " " + JSON.stringify(part.rawValue));
          chunks.push(part.value);
          c.enqueue(part.value);
        },
      }),
    );
    let last;
    for await (const m of readUIMessageStream({ message, stream, terminateOnError: true })) last = m;
    return structuredClone(last);
  };
  const messages = [{ id: "u1", role: "user", parts: [{ type: "text", text: prompt }] }];
  let message = await read(await send(messages));
  const asked = message.parts.find((p) => p.type === "dynamic-tool" && p.state === "approval-requested");
  check(asked, "the command asks approval", message);
  asked.state = "approval-responded";
  asked.approval = { ...asked.approval, approved: true };
  messages.push(message);
  message = await read(await send(messages), message);
  const tool = message.parts.find((p) => p.toolCallId === asked.toolCallId);
  check(tool.state === "output-available" && JSON.stringify(tool.output).includes("made"), "the command's output", { tool, chunks });
  check(message.parts.some((p) => p.type === "text" && p.text.length > 0), "an answer", message);
  messages[messages.length - 1] = message;
  await validateUIMessages({ messages });
  const replayed = await getJSON(`/v1/sessions/${message.metadata.sessionId}/messages`);
  await validateUIMessages({ messages: replayed });
  check(replayed.some((m) => m.parts.some((p) => p.type === "dynamic-tool")), "the tool call replayed", replayed);
}

async function agui() {
  const { HttpAgent } = await import("@ag-ui/client");
  const agent = new HttpAgent({ url: url + "/ag-ui", threadId: "real-" + Date.now(), headers });
  agent.addMessage({ id: "u1", role: "user", content: prompt });
  let outcome;
  const sub = { onRunFinishedEvent: (p) => { outcome = p.outcome; } };
  await agent.runAgent({ forwardedProps: { mode } }, sub);
  check(outcome === "interrupt" && agent.pendingInterrupts.length === 1, "the command's ask interrupts the run", agent.messages);
  const intr = agent.pendingInterrupts[0];
  const allow = intr.metadata.options.find((o) => o.kind === "allow_once") ?? intr.metadata.options[0];
  await agent.runAgent({ resume: [{ interruptId: intr.id, status: "resolved", payload: { optionId: allow.optionId } }] }, sub);
  check(outcome === "success", "the resumed run succeeds", agent.messages);
  const result = agent.messages.find((m) => m.role === "tool" && m.toolCallId === intr.toolCallId);
  check(result && result.content.includes("made"), "the command's result", agent.messages);
}

run(async () => {
  const warnings = [];
  const warn = console.warn;
  console.warn = (...a) => { warnings.push(a.join(" ")); warn(...a); };
  await (process.env.WEB_EDGE === "agui" ? agui() : aisdk());
  check(warnings.length === 0, "no client warnings", warnings);
});
