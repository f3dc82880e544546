// agui runs POST /ag-ui through AG-UI's own client (@ag-ui/client 1.0.0's
// HttpAgent, whose pipeline enforces the event schemas and runs
// verifyEvents), and checks each run's events again with verifyEvents and
// @ag-ui/core's EventSchema: a turn with thoughts, a tool call and a plan
// (the state's plan); an edit whose permission ask interrupts the run,
// resumed with an option the interrupt's responseSchema lists; one
// resumed cancelled; a notice (CUSTOM) and a compaction (an activity); a
// subagent (an activity under its tool call) whose edit's ask interrupts
// the run; a failing turn (RUN_ERROR); and the thread reopened under its
// session id, which a MESSAGES_SNAPSHOT fills in.
import { HttpAgent, verifyEvents } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { from, lastValueFrom, toArray } from "rxjs";
import { check, headers, run, url } from "./lib.mjs";

// The client warns when it strips what the schemas don't know: none may.
const warnings = [];
const warn = console.warn;
console.warn = (...args) => {
  warnings.push(args.join(" "));
  warn(...args);
};

// runOnce runs the agent and checks the run's events.
async function runOnce(agent, params = {}, subscriber = {}) {
  const events = [];
  let finished;
  let failed;
  try {
    await agent.runAgent(params, {
      ...subscriber,
      onEvent: ({ event }) => {
        events.push(event);
      },
      onRunFinishedEvent: (p) => {
        finished = p;
      },
    });
  } catch (err) {
    failed = err;
  }
  for (const e of events) {
    EventSchema.parse(e);
  }
  await lastValueFrom(from(events).pipe(verifyEvents(), toArray()));
  check(events[0]?.type === "RUN_STARTED", "RUN_STARTED first", events.map((e) => e.type));
  return { events, finished, failed, types: events.map((e) => e.type) };
}

function last(agent, role) {
  return agent.messages.filter((m) => m.role === role).at(-1);
}

run(async () => {
  const threadId = "thread-" + Date.now();
  const agent = new HttpAgent({ url: url + "/ag-ui", threadId, headers });

  // Thoughts, a read, a plan.
  agent.addMessage({ id: "u1", role: "user", content: "Please think, plan and read the README." });
  let r = await runOnce(agent, { forwardedProps: { agent: "mock" } });
  check(r.finished?.outcome === "success", "the run succeeds", r.types);
  for (const t of ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "REASONING_START",
    "REASONING_MESSAGE_CONTENT", "REASONING_END", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
    "TOOL_CALL_RESULT", "STATE_SNAPSHOT", "STATE_DELTA", "RUN_FINISHED"]) {
    check(r.types.includes(t), "a " + t, r.types);
  }
  check(last(agent, "assistant").content.includes("You said: Please think, plan and read the README."), "the answer", agent.messages);
  check(agent.state.plan?.length === 3 && agent.state.plan.every((e) => e.status === "completed"), "the plan in the state", agent.state);
  const readResult = JSON.parse(last(agent, "tool").content);
  check(readResult.kind === "read" && readResult.status === "completed", "the read's result", readResult);
  const sessionId = r.finished.result.sessionId;
  check(sessionId, "the session id in the result", r.finished.result);

  // An edit: the ask interrupts the run; the next run resumes it.
  agent.addMessage({ id: "u2", role: "user", content: "Now edit mock.txt." });
  r = await runOnce(agent);
  check(r.finished?.outcome === "interrupt", "the ask interrupts the run", r.types);
  check(agent.pendingInterrupts.length === 1, "one interrupt pending", agent.pendingInterrupts);
  let intr = agent.pendingInterrupts[0];
  check(intr.reason === "permission" && intr.toolCallId, "the interrupt names its tool call", intr);
  const choices = intr.responseSchema.properties.optionId.enum;
  check(choices.includes("allow") && choices.includes("reject"), "the response schema lists the options", intr.responseSchema);
  r = await runOnce(agent, { resume: [{ interruptId: intr.id, status: "resolved", payload: { optionId: "allow" } }] });
  check(r.finished?.outcome === "success", "the resumed run succeeds", r.types);
  check(agent.pendingInterrupts.length === 0, "no interrupt left", agent.pendingInterrupts);
  const editResult = agent.messages.find((m) => m.role === "tool" && m.toolCallId === intr.toolCallId);
  check(editResult && JSON.parse(editResult.content).content.some((c) => c.type === "diff"), "the edit's diff in its result", agent.messages);
  check(last(agent, "assistant").content.includes("You said: Now edit mock.txt."), "the rest of the turn", agent.messages);

  // Resumed cancelled: the turn is cancelled.
  agent.addMessage({ id: "u3", role: "user", content: "Edit it again." });
  r = await runOnce(agent);
  intr = agent.pendingInterrupts[0];
  check(r.finished?.outcome === "interrupt" && intr, "the second edit interrupts", r.types);
  r = await runOnce(agent, { resume: [{ interruptId: intr.id, status: "cancelled" }] });
  check(r.finished?.outcome === "cancelled", "a cancelled resume cancels the turn", r.types);

  // A notice (a CUSTOM event) and a compaction (an activity message, kept
  // in the agent's messages).
  agent.addMessage({ id: "u4", role: "user", content: "notice, then compact" });
  let customs = [];
  r = await runOnce(agent, {}, { onCustomEvent: ({ event }) => customs.push(event) });
  const notice = r.events.find((e) => e.type === "CUSTOM" && e.name === "notice");
  check(notice && notice.value.severity === "warning" && notice.value.title.includes("retried"), "the notice as a CUSTOM event", r.events);
  check(customs.length === 1, "the notice through onCustomEvent", customs);
  const activity = agent.messages.find((m) => m.role === "activity" && m.activityType === "compaction");
  check(activity && activity.content.status === "completed" && activity.content.summary.includes("demonstration"),
    "the compaction as an activity message, completed with its summary", agent.messages);
  check(!last(agent, "assistant").content.includes("Context compacted"), "no compaction text", agent.messages);

  // A subagent: an activity of type "subagent" whose id is the child's
  // session id, naming the delegate tool call; its edit's ask is an
  // interrupt naming the subagent, resumed like any.
  agent.addMessage({ id: "u5", role: "user", content: "Please delegate." });
  r = await runOnce(agent);
  intr = agent.pendingInterrupts[0];
  check(r.finished?.outcome === "interrupt" && intr?.metadata?.subagent, "the subagent's edit interrupts, naming the subagent", agent.pendingInterrupts);
  let sub = agent.messages.find((m) => m.role === "activity" && m.activityType === "subagent");
  check(sub && sub.id === intr.metadata.subagent && sub.content.state === "running", "the running subagent's activity", agent.messages);
  const delegateCall = agent.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === sub.content.toolCallId);
  check(delegateCall, "the subagent names the tool call that started it", agent.messages);
  check(sub.content.parts.some((p) => p.type === "dynamic-tool" && p.toolCallId === intr.toolCallId && p.state === "approval-requested"),
    "the subagent's edit approval-requested", sub);
  r = await runOnce(agent, { resume: [{ interruptId: intr.id, status: "resolved", payload: { optionId: "allow" } }] });
  check(r.finished?.outcome === "success", "the resumed run succeeds", r.types);
  sub = agent.messages.find((m) => m.role === "activity" && m.activityType === "subagent");
  check(sub.content.state === "idle" && sub.content.stopReason === "end_turn"
    && sub.content.parts.some((p) => p.type === "dynamic-tool" && p.toolName === "edit" && p.state === "output-available")
    && sub.content.parts.some((p) => p.type === "text" && p.text.includes("Done: mock.txt")), "the subagent idle, its edit done, its answer", sub);
  check(agent.messages.filter((m) => m.role === "activity" && m.activityType === "subagent").length === 1, "one subagent activity", agent.messages);
  check(agent.messages.some((m) => m.role === "tool" && m.toolCallId === delegateCall.id), "the delegate call's result", agent.messages);

  // A failing turn: RUN_ERROR.
  agent.addMessage({ id: "u6", role: "user", content: "fail now" });
  r = await runOnce(agent);
  const runError = r.events.find((e) => e.type === "RUN_ERROR");
  check(runError && runError.message.includes("simulated agent failure"), "RUN_ERROR says why", r.events);

  // Reopened under its session id: the conversation comes as a snapshot.
  const reopened = new HttpAgent({ url: url + "/ag-ui", threadId: sessionId, headers });
  r = await runOnce(reopened);
  check(r.types.includes("MESSAGES_SNAPSHOT") && r.finished?.outcome === "success", "a snapshot of the reopened thread", r.types);
  const users = reopened.messages.filter((m) => m.role === "user").map((m) => m.content);
  check(users.join("|") === "Please think, plan and read the README.|Now edit mock.txt.|Edit it again.|notice, then compact|Please delegate.|fail now",
    "the reopened thread's user messages", reopened.messages);
  check(reopened.messages.some((m) => m.role === "activity" && m.activityType === "compaction" && m.content.status === "completed"),
    "the compaction in the snapshot", reopened.messages);
  check(reopened.messages.some((m) => m.role === "tool" && m.content.includes("diff")), "the edit's result in the snapshot", reopened.messages);
  const reopenedSub = reopened.messages.find((m) => m.role === "activity" && m.activityType === "subagent");
  check(reopenedSub && reopenedSub.content.state === "idle" && reopenedSub.content.toolCallId
    && reopenedSub.content.parts.some((p) => p.type === "text" && p.text.includes("Done: mock.txt")), "the subagent in the snapshot", reopened.messages);
  reopened.addMessage({ id: "u7", role: "user", content: "and once more" });
  r = await runOnce(reopened);
  check(r.finished?.outcome === "success" && last(reopened, "assistant").content.includes("You said: and once more"),
    "the reopened thread goes on", reopened.messages);

  check(warnings.length === 0, "no client warnings", warnings);
});
