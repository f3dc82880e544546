// aisdk_stream checks POST /api/chat's streams with the AI SDK's own
// readers (package ai): every chunk passes parseJsonEventStream with
// uiMessageChunkSchema, readUIMessageStream (terminating on error) folds
// them into a message, and GET /v1/sessions/{id}/messages passes
// validateUIMessages. It covers a turn with thoughts, a tool call and a
// plan; an edit approved, and one denied, each continued in the next
// request; a notice and a compaction; a subagent under its tool call, its
// edit approved; a failing turn; the session list and the replayed
// messages.
import {
  lastAssistantMessageIsCompleteWithApprovalResponses,
  parseJsonEventStream,
  readUIMessageStream,
  uiMessageChunkSchema,
  validateUIMessages,
} from "ai";
import { check, getJSON, headers, run, url } from "./lib.mjs";

const chatId = "stream-" + Date.now();

// send POSTs a chat request and returns the response, checking its headers.
async function send(messages) {
  const r = await fetch(url + "/api/chat", {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ id: chatId, trigger: "submit-message", messages }),
  });
  check(r.ok, `POST /api/chat: ${r.status}`, await r.clone().text());
  check(r.headers.get("content-type") === "text/event-stream", "content-type", r.headers.get("content-type"));
  check(r.headers.get("x-vercel-ai-ui-message-stream") === "v1", "x-vercel-ai-ui-message-stream header");
  return r;
}

// read parses a response with the SDK's parser and schema, folds it with
// readUIMessageStream (continuing message, if given) and returns the
// chunks and the last message.
async function read(resp, message) {
  const chunks = [];
  const stream = parseJsonEventStream({ stream: resp.body, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(part, controller) {
        if (!part.success) {
          throw new Error("uiMessageChunkSchema rejected a chunk: " + part.error + " " + JSON.stringify(part.rawValue));
        }
        chunks.push(part.value);
        controller.enqueue(part.value);
      },
    }),
  );
  let last;
  for await (const m of readUIMessageStream({ message, stream, terminateOnError: true })) {
    last = m;
  }
  return { chunks, message: structuredClone(last) };
}

function user(id, text) {
  return { id, role: "user", parts: [{ type: "text", text }] };
}

function textOf(message) {
  return message.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
}

function toolOf(message, state) {
  return message.parts.find((p) => p.type === "dynamic-tool" && (!state || p.state === state));
}

// answer makes the assistant message's asked tool part approval-responded.
function answer(message, approved) {
  const m = structuredClone(message);
  const p = toolOf(m, "approval-requested");
  check(p, "an approval-requested tool part", m);
  p.state = "approval-responded";
  p.approval = { ...p.approval, approved };
  return m;
}

run(async () => {
  const messages = [user("u1", "Please think, plan and read the README.")];
  let { chunks, message } = await read(await send(messages));
  const types = chunks.map((c) => c.type);
  check(types[0] === "start" && types[1] === "start-step", "framing: start, start-step first", types);
  check(types.at(-1) === "finish" && types.at(-2) === "finish-step", "framing: finish-step, finish last", types);
  check(textOf(message).includes("You said: Please think, plan and read the README."), "the answer", message);
  check(message.parts.some((p) => p.type === "reasoning" && p.text.includes("demonstration")), "a reasoning part", message);
  const read1 = toolOf(message, "output-available");
  check(read1 && read1.toolName === "read" && read1.title.startsWith("Read "), "the read tool part", message);
  check(read1.output.content[0].content.text.includes("Mock README"), "the read's output", read1);
  const plan = message.parts.find((p) => p.type === "data-plan");
  check(plan && plan.data.entries.length === 3 && plan.data.entries.every((e) => e.status === "completed"), "the plan, done", plan);
  const sessionId = message.metadata.sessionId;
  check(sessionId, "the session id in the message metadata", message.metadata);
  check(message.metadata.usage.totalTokens > 0, "usage in the metadata", message.metadata);
  messages.push(message);

  // An edit: the response ends on the approval request; approved, the next
  // request streams the rest of the turn into the same message.
  messages.push(user("u2", "Now edit mock.txt."));
  ({ chunks, message } = await read(await send(messages)));
  check(chunks.at(-1).type === "finish" && chunks.at(-1).finishReason === "tool-calls", "the ask ends the response", chunks);
  const asked = toolOf(message, "approval-requested");
  check(asked && asked.toolName === "edit" && asked.approval.id, "the edit asks approval", message);
  messages.push(answer(message, true));
  ({ chunks, message } = await read(await send(messages), messages.at(-1)));
  const edit = message.parts.find((p) => p.toolCallId === asked.toolCallId);
  check(edit.state === "output-available", "the approved edit's output", message);
  const diff = edit.output.content.find((c) => c.type === "diff");
  check(diff && diff.newText === "hello, world\n" && diff.oldText === "hello\n", "the edit's diff in its output", edit);
  check(textOf(message).includes("You said: Now edit mock.txt."), "the rest of the turn", message);
  messages[messages.length - 1] = message;

  // Denied.
  messages.push(user("u3", "Edit it again."));
  ({ message } = await read(await send(messages)));
  messages.push(answer(message, false));
  ({ message } = await read(await send(messages), messages.at(-1)));
  const denied = message.parts.find((p) => p.type === "dynamic-tool" && p.state === "output-denied");
  check(denied, "the denied edit is output-denied", message);
  messages[messages.length - 1] = message;

  // A notice and a compaction: data parts, the compaction's replaced as it
  // goes (its id), completed with its summary.
  messages.push(user("u4", "notice, then compact"));
  ({ message } = await read(await send(messages)));
  const notice = message.parts.find((p) => p.type === "data-notice");
  check(notice && notice.data.severity === "warning" && notice.data.title.includes("retried"), "the notice as a data-notice part", message);
  const compactions = message.parts.filter((p) => p.type === "data-compaction");
  check(compactions.length === 1 && compactions[0].data.status === "completed" && compactions[0].data.summary.includes("demonstration"),
    "one data-compaction part, completed with its summary", message);
  check(!textOf(message).includes("Context compacted"), "no compaction text for a client that takes the part", message);
  messages.push(message);

  // A subagent: a data-subagent part (replaced as it goes, its id the
  // child's session id) naming the delegate tool call, the child's read and
  // edit in it; the edit's ask is a tool part of its own in a step of its
  // own, which the chat core sends by itself once approved.
  messages.push(user("u5", "Please delegate."));
  ({ message } = await read(await send(messages)));
  const subAsk = toolOf(message, "approval-requested");
  check(subAsk && subAsk.toolName === "edit" && subAsk.toolMetadata?.subagent, "the subagent's edit asks on a tool part of its own", message);
  let subs = message.parts.filter((p) => p.type === "data-subagent");
  check(subs.length === 1 && subs[0].id === subAsk.toolMetadata.subagent && subs[0].data.state === "running", "one running data-subagent part", message);
  const delegateCall = message.parts.find((p) => p.type === "dynamic-tool" && p.toolCallId === subs[0].data.toolCallId);
  check(delegateCall && delegateCall.title.startsWith("Delegate"), "the subagent names the tool call that started it", message);
  check(subs[0].data.parts.some((p) => p.type === "dynamic-tool" && p.toolName === "read" && p.state === "output-available"), "the subagent's read", subs[0]);
  check(subs[0].data.parts.some((p) => p.type === "dynamic-tool" && p.state === "approval-requested" && p.approval.id === subAsk.approval.id),
    "the subagent's edit approval-requested", subs[0]);
  messages.push(answer(message, true));
  check(lastAssistantMessageIsCompleteWithApprovalResponses({ messages }), "the answered ask completes the last step", messages.at(-1));
  ({ message } = await read(await send(messages), messages.at(-1)));
  subs = message.parts.filter((p) => p.type === "data-subagent");
  const sub = subs[0]?.data;
  check(subs.length === 1 && sub.state === "idle" && sub.stopReason === "end_turn", "the subagent idle at the end", message);
  const subEdit = sub.parts.find((p) => p.type === "dynamic-tool" && p.toolName === "edit");
  check(subEdit.state === "output-available" && subEdit.approval.approved === true && subEdit.output.content.some((c) => c.type === "diff"),
    "the subagent's edit, approved, with its diff", sub);
  check(sub.parts.some((p) => p.type === "text" && p.text.includes("Done: mock.txt")), "the subagent's answer", sub);
  check(message.parts.find((p) => p.toolCallId === subAsk.toolCallId).state === "output-available", "the asked tool part's output", message);
  check(message.parts.find((p) => p.toolCallId === delegateCall.toolCallId).state === "output-available", "the delegate call's output", message);
  check(!textOf(message).includes("Done: mock.txt"), "the subagent's text is not the message's", message);
  messages[messages.length - 1] = message;

  // A turn that fails: an error chunk, which terminates readUIMessageStream.
  messages.push(user("u6", "fail please"));
  let failed;
  try {
    await read(await send(messages));
  } catch (err) {
    failed = err;
  }
  check(failed && String(failed.message).includes("simulated agent failure"), "the failing turn's error", String(failed));

  // The session list and the conversation replayed as UIMessages.
  const list = await getJSON("/v1/sessions");
  check(list.sessions.some((s) => s.sessionId === sessionId), "the session in GET /v1/sessions", list);
  const replayed = await getJSON(`/v1/sessions/${sessionId}/messages`);
  await validateUIMessages({ messages: replayed });
  check(replayed.filter((m) => m.role === "user").length === 6, "six user messages replayed", replayed);
  const replayedSub = replayed.flatMap((m) => m.parts).find((p) => p.type === "data-subagent");
  check(replayedSub && replayedSub.data.state === "idle" && replayedSub.data.toolCallId === delegateCall.toolCallId
    && replayedSub.data.parts.some((p) => p.type === "dynamic-tool" && p.toolName === "edit" && p.state === "output-available")
    && replayedSub.data.parts.some((p) => p.type === "text" && p.text.includes("Done: mock.txt")),
    "the subagent replayed under its tool call", replayed);
  check(!replayed.some((m) => m.role === "user" && textOf(m).includes("Look at the README")), "the subagent's prompt is not a user message", replayed);
  check(replayed.some((m) => m.parts.some((p) => p.type === "data-compaction" && p.data.status === "completed" && p.data.summary)),
    "the compaction replayed", replayed);
  check(!replayed.some((m) => m.parts.some((p) => p.type === "data-notice")), "no notice replayed (notices are not history)", replayed);
  check(replayed.some((m) => m.parts.some((p) => p.type === "dynamic-tool" && p.output?.content?.some((c) => c.type === "diff"))),
    "the edit's diff replayed", replayed);
});
