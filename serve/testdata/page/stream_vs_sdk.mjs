// stream_vs_sdk checks that the page reads POST /api/chat's streams as the
// AI SDK does: each response is read twice, by the SDK's own readers
// (parseJsonEventStream with uiMessageChunkSchema, then readUIMessageStream
// terminating on error) and by the page's (serve/page/assets/stream.js, copied here
// as stream.mjs), and the two messages must be equal, chunk errors
// included. Turns: thoughts, a plan and a read; an edit approved and one
// denied, each continued from the message that asked; the mock's demo; a
// failing turn.
import { isDeepStrictEqual } from "node:util";
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from "ai";
import { MessageState, uiChunks } from "./stream.mjs";
import { check, headers, run, url } from "./lib.mjs";

const chatId = "page-" + Date.now();

async function send(messages) {
  const r = await fetch(url + "/api/chat", {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ id: chatId, trigger: "submit-message", messages }),
  });
  check(r.ok, `POST /api/chat: ${r.status}`, await r.clone().text());
  return r;
}

// sdkRead folds a body with the SDK's readers, continuing message if given.
async function sdkRead(body, message) {
  const stream = parseJsonEventStream({ stream: body, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(part, controller) {
        if (!part.success) throw new Error("uiMessageChunkSchema: " + part.error);
        controller.enqueue(part.value);
      },
    }),
  );
  let last = message;
  try {
    for await (const m of readUIMessageStream({ message, stream, terminateOnError: true })) last = structuredClone(m);
  } catch (err) {
    return { message: last, error: err.message };
  }
  return { message: last };
}

// pageRead folds a body with the page's reader.
async function pageRead(body, message) {
  const st = new MessageState(message, "unused");
  try {
    for await (const c of uiChunks(body)) st.apply(c);
  } catch (err) {
    return { message: st.message, error: err.message };
  }
  return { message: st.message };
}

// both reads one response both ways and checks they agree; it returns
// the SDK's result.
async function both(what, resp, message) {
  const [a, b] = resp.body.tee();
  const [sdk, page] = await Promise.all([sdkRead(a, message), pageRead(b, message)]);
  const norm = (v) => JSON.parse(JSON.stringify(v ?? null));
  check(isDeepStrictEqual(norm(page.message), norm(sdk.message)), `${what}: the page's message is the SDK's`,
    { sdk: sdk.message, page: page.message });
  check(Boolean(page.error) === Boolean(sdk.error) && (!sdk.error || sdk.error.includes(page.error)),
    `${what}: the page's error is the SDK's`, { sdk: sdk.error, page: page.error });
  console.log(`${what}: ${sdk.message?.parts?.length ?? 0} parts${sdk.error ? `, error "${sdk.error}"` : ""}: the same`);
  return sdk;
}

function user(id, text) {
  return { id, role: "user", parts: [{ type: "text", text }] };
}

// answer makes the message's asked tool part approval-responded.
function answer(message, approved) {
  const m = structuredClone(message);
  const p = m.parts.find((x) => x.type === "dynamic-tool" && x.state === "approval-requested");
  check(p, "an approval-requested tool part", m);
  p.state = "approval-responded";
  p.approval = { ...p.approval, approved };
  return m;
}

run(async () => {
  const messages = [];
  const turn = async (id, text) => {
    messages.push(user(id, text));
    const { message } = await both(text, await send(messages));
    messages.push(message);
    return message;
  };
  const approve = async (what, approved) => {
    messages[messages.length - 1] = answer(messages.at(-1), approved);
    const { message } = await both(what, await send(messages), messages.at(-1));
    messages[messages.length - 1] = message;
  };
  await turn("u1", "Please think, plan and read the README.");
  await turn("u2", "Now edit mock.txt.");
  await approve("the edit, approved", true);
  await turn("u3", "Edit it again.");
  await approve("the edit, denied", false);
  await turn("u4", "demo");
  await approve("the demo's edit, approved", true);
  messages.push(user("u5", "fail please"));
  const failed = await both("fail please", await send(messages));
  check(failed.error && failed.error.includes("simulated agent failure"), "the failing turn's error", failed.error);
});
