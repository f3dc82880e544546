// aisdk_chat runs whole exchanges through the AI SDK's chat core
// (AbstractChat, what useChat runs on) with DefaultChatTransport against
// POST /api/chat: a turn whose edit asks approval, answered with
// addToolApprovalResponse and sent on by
// lastAssistantMessageIsCompleteWithApprovalResponses, ending with the
// edit's output in the message; a slow turn stopped mid-stream, then the
// next; the chat reopened from GET /v1/sessions/{id}/messages under its
// session id and continued; and resumeStream with no turn running.
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  validateUIMessages,
} from "ai";
import { check, getJSON, headers, run, url, waitFor } from "./lib.mjs";

// State is a ChatState as a UI framework keeps one (React's, without
// React): messages replaced, never mutated.
class State {
  constructor(messages = []) {
    this.status = "ready";
    this.error = undefined;
    this.messages = messages;
  }
  pushMessage = (m) => {
    this.messages = this.messages.concat(m);
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (i, m) => {
    this.messages = [...this.messages.slice(0, i), this.snapshot(m), ...this.messages.slice(i + 1)];
  };
  snapshot = (x) => structuredClone(x);
}

class Chat extends AbstractChat {
  constructor({ messages, ...init }) {
    super({ ...init, state: new State(messages) });
  }
}

const errors = [];

function newChat(id, messages) {
  return new Chat({
    id,
    messages,
    transport: new DefaultChatTransport({ api: url + "/api/chat", headers, body: { agent: "mock" } }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    onError: (e) => errors.push(e),
  });
}

function textOf(message) {
  return message.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
}

function ready(chat, what) {
  check(chat.status === "ready" && !chat.error, what + ": the chat is ready", { status: chat.status, error: String(chat.error) });
}

run(async () => {
  const chat = newChat("abstract-" + Date.now());

  // A tool approval, answered; the SDK sends it on by itself.
  await chat.sendMessage({ text: "Please think, then edit mock.txt." });
  ready(chat, "the response with the ask");
  const asked = chat.lastMessage.parts.find((p) => p.type === "dynamic-tool" && p.state === "approval-requested");
  check(asked, "the edit asks approval", chat.lastMessage);
  check(asked.approval.descriptor.options.some((o) => o.kind === "allow_once"), "the ask's options in the approval", asked);
  await chat.addToolApprovalResponse({ id: asked.approval.id, approved: true });
  await waitFor("the approved edit's output", () =>
    chat.status === "ready" && chat.lastMessage.parts.some((p) => p.toolCallId === asked.toolCallId && p.state === "output-available"));
  ready(chat, "the rest of the turn");
  check(chat.messages.length === 2, "one user and one assistant message", chat.messages);
  const reply = chat.lastMessage;
  const edit = reply.parts.find((p) => p.toolCallId === asked.toolCallId);
  check(edit.output.content.some((c) => c.type === "diff" && c.path.endsWith("mock.txt")), "the edit's diff in its output", edit);
  check(textOf(reply).includes("You said: Please think, then edit mock.txt."), "the answer after the edit", reply);
  check(reply.parts.some((p) => p.type === "reasoning"), "the thought before the edit", reply);
  await validateUIMessages({ messages: chat.messages });
  const sessionId = reply.metadata.sessionId;
  check(sessionId, "the session id in the metadata", reply.metadata);

  // A slow turn stopped mid-stream: the next message is answered.
  const slow = chat.sendMessage({ text: "slow please" });
  await waitFor("the slow answer to stream", () => chat.status === "streaming" && textOf(chat.lastMessage).length > 0);
  await chat.stop();
  await slow;
  ready(chat, "after stop");
  await chat.sendMessage({ text: "hello again" });
  ready(chat, "the turn after the stopped one");
  check(textOf(chat.lastMessage).includes("You said: hello again"), "the answer after a stop", chat.lastMessage);

  // Reopened from the session list under the session id, and continued.
  const replayed = await getJSON(`/v1/sessions/${sessionId}/messages`);
  await validateUIMessages({ messages: replayed });
  check(replayed.filter((m) => m.role === "user").map((m) => textOf(m)).join("|") ===
    "Please think, then edit mock.txt.|slow please|hello again", "the user messages replayed", replayed);
  const again = newChat(sessionId, replayed);
  await again.sendMessage({ text: "and once more" });
  ready(again, "the reopened chat");
  check(textOf(again.lastMessage).includes("You said: and once more"), "the reopened chat's answer", again.lastMessage);

  // No turn runs: resumeStream finds nothing (204) and leaves the chat ready.
  await again.resumeStream();
  ready(again, "resumeStream with no turn");
  check(errors.length === 0, "no chat errors", errors.map(String));
});
