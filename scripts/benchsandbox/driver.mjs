// driver.mjs is benchsandbox's client: sandbox-agent's own TypeScript SDK
// (npm sandbox-agent 0.4.2) driving a server that speaks sandbox-agent's
// API, one step per command, so that the Go program times each step.
//
//   node driver.mjs BASE_URL AGENT
//
// It reads one JSON command per line on stdin and answers each with one
// JSON line on stdout: {"ok":true,...} or {"ok":false,"error":"..."}.
//
//   {"cmd":"init"}                 SandboxAgent.connect and the agent's ACP
//                                  server (its initialize)
//   {"cmd":"new","cwd":CWD}        createSession({agent: AGENT, cwd})
//   {"cmd":"turn","prompt":TEXT}   session.prompt; answers the stop reason and
//                                  the agent's text (from onEvent)
//   {"cmd":"quit"}                 dispose (DELETE of its ACP servers), exit
//
// It prints {"ready":true} once the SDK is loaded.
import readline from "node:readline";
import { SandboxAgent } from "sandbox-agent";

const [baseUrl, agent] = process.argv.slice(2);
let sdk;
let session;
let text = "";

const steps = {
  async init() {
    sdk = await SandboxAgent.connect({ baseUrl });
    await sdk.getLiveConnection(agent);
    return {};
  },
  async new({ cwd }) {
    session = await sdk.createSession({ agent, cwd });
    session.onEvent((e) => {
      const u = e.payload?.params?.update;
      if (e.sender === "agent" && u?.sessionUpdate === "agent_message_chunk" && u.content?.type === "text") text += u.content.text;
    });
    return { sessionId: session.agentSessionId };
  },
  async turn({ prompt }) {
    text = "";
    const res = await session.prompt([{ type: "text", text: prompt }]);
    await new Promise((resolve) => setImmediate(resolve)); // the listeners of the last updates
    return { stopReason: res.stopReason, text };
  },
  async quit() {
    await sdk?.dispose();
    return {};
  },
};

console.log(JSON.stringify({ ready: true }));
for await (const line of readline.createInterface({ input: process.stdin })) {
  const cmd = JSON.parse(line);
  try {
    console.log(JSON.stringify({ ok: true, ...(await steps[cmd.cmd](cmd)) }));
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: String(err?.stack ?? err) }));
  }
  if (cmd.cmd === "quit") break;
}
process.exit(0);
