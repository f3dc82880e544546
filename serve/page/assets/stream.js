// stream.js reads the AI SDK's UI message stream (package `ai` 5–7) as its
// chat core does: server-sent events parsed like eventsource-parser, each
// event's data one JSON chunk ("[DONE]" skipped), and each chunk applied to
// the assistant message being streamed like processUIMessageStream.

/** The SSE events of a response body, as their data strings. */
export async function* sseData(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SSEParser();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return; // an event without its blank line is dropped, as the spec says
      yield* parser.feed(value);
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * SSEParser splits text into server-sent events: lines end in CRLF, LF or
 * CR; a blank line ends an event; `data` lines join with "\n"; comments and
 * other fields are ignored; a leading BOM is dropped.
 */
export class SSEParser {
  constructor() {
    this.pending = '';
    this.data = [];
    this.first = true;
  }

  /** feed returns the data of the events that text completes. */
  feed(text) {
    if (this.first) {
      this.first = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const s = this.pending + text;
    const out = [];
    let start = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s[i];
      if (c !== '\n' && c !== '\r') continue;
      if (c === '\r' && i === s.length - 1) break; // a CR at the end may be half a CRLF
      this.line(s.slice(start, i), out);
      if (c === '\r' && s[i + 1] === '\n') i++;
      start = i + 1;
    }
    this.pending = s.slice(start);
    return out;
  }

  line(line, out) {
    if (line === '') {
      if (this.data.length > 0) out.push(this.data.join('\n'));
      this.data = [];
      return;
    }
    if (line[0] === ':') return; // a comment
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value[0] === ' ') value = value.slice(1);
    if (field === 'data') this.data.push(value);
  }
}

/** The UI message chunks of a response body, parsed; "[DONE]" is skipped. */
export async function* uiChunks(body) {
  for await (const data of sseData(body)) {
    if (data === '[DONE]') continue;
    let chunk;
    try {
      chunk = JSON.parse(data);
    } catch (e) {
      throw new StreamError(`a stream event that is not JSON: ${e.message}`);
    }
    if (chunk === null || typeof chunk !== 'object' || typeof chunk.type !== 'string') {
      throw new StreamError('a stream event with no chunk type');
    }
    yield chunk;
  }
}

/** StreamError is a chunk the chat core would refuse. */
export class StreamError extends Error {
  constructor(message) {
    super(message);
    this.name = 'StreamError';
  }
}

/** ErrorChunk is the stream's own error chunk: the turn failed, and the chat core stops there. */
export class ErrorChunk extends Error {
  constructor(message) {
    super(message);
    this.name = 'ErrorChunk';
  }
}

/** isToolPart is whether part is a tool call (static or dynamic). */
export function isToolPart(part) {
  return part.type === 'dynamic-tool' || part.type.startsWith('tool-');
}

/** toolName is a tool part's tool name. */
export function toolName(part) {
  return part.type === 'dynamic-tool' ? part.toolName : part.type.slice('tool-'.length);
}

/**
 * MessageState is the assistant message one response streams, continuing
 * lastMessage when that is an assistant message (a tool approval's
 * response goes on in the message that asked).
 */
export class MessageState {
  constructor(lastMessage, newID, { resetOnFirstStart = false } = {}) {
    this.message = lastMessage?.role === 'assistant'
      ? structuredClone(lastMessage)
      : { id: newID, role: 'assistant', parts: [] };
    this.text = new Map(); // text parts streaming, by chunk id
    this.reasoning = new Map();
    this.partialTools = new Map(); // tool inputs streaming, by tool call id
    this.resetOnFirstStart = resetOnFirstStart;
    this.started = false;
    this.finishReason = undefined;
    this.errorText = undefined;
  }

  /** apply changes the message by one chunk; it throws StreamError where the chat core would. */
  apply(chunk) {
    const handler = handlers[chunk.type];
    if (handler) {
      handler(this, chunk);
    } else if (chunk.type.startsWith('data-')) {
      this.data(chunk);
    } else {
      throw new StreamError(`an unknown chunk type "${chunk.type}"`);
    }
  }

  /** stepParts are the parts of the current step (after the last step-start). */
  stepParts() {
    const parts = this.message.parts;
    let i = parts.length - 1;
    while (i >= 0 && parts[i].type !== 'step-start') i--;
    return parts.slice(i + 1);
  }

  /** tool finds a tool call's part, in this step first, else anywhere in the message. */
  tool(toolCallId) {
    const found = this.stepParts().find((p) => isToolPart(p) && p.toolCallId === toolCallId)
      ?? [...this.message.parts].reverse().find((p) => isToolPart(p) && p.toolCallId === toolCallId);
    if (!found) throw new StreamError(`no tool call "${toolCallId}" for this chunk`);
    return found;
  }

  /** upsertTool sets a tool part's fields, adding the part if this step has none. */
  upsertTool(chunk, fields) {
    let part = this.stepParts().find((p) => isToolPart(p) && p.toolCallId === chunk.toolCallId);
    if (!part) {
      part = chunk.dynamic
        ? { type: 'dynamic-tool', toolName: chunk.toolName, toolCallId: chunk.toolCallId }
        : { type: `tool-${chunk.toolName}`, toolCallId: chunk.toolCallId };
      this.message.parts.push(part);
    }
    if (chunk.title !== undefined) part.title = chunk.title;
    if (chunk.toolMetadata !== undefined) part.toolMetadata = chunk.toolMetadata;
    if (chunk.providerExecuted !== undefined) part.providerExecuted = chunk.providerExecuted;
    Object.assign(part, fields);
    return part;
  }

  data(chunk) {
    if (chunk.transient) return;
    const existing = chunk.id != null
      ? this.message.parts.find((p) => p.type === chunk.type && p.id === chunk.id)
      : undefined;
    if (existing) {
      existing.data = chunk.data;
    } else {
      const part = { type: chunk.type, data: chunk.data };
      if (chunk.id != null) part.id = chunk.id;
      this.message.parts.push(part);
    }
  }

  metadata(m) {
    if (m == null) return;
    this.message.metadata = this.message.metadata == null ? m : mergeObjects(this.message.metadata, m);
  }
}

/** mergeObjects merges plain objects deeply, as the chat core merges message metadata. */
function mergeObjects(base, over) {
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined || k === '__proto__' || k === 'constructor' || k === 'prototype') continue;
    out[k] = isPlain(v) && isPlain(base[k]) ? mergeObjects(base[k], v) : v;
  }
  return out;
}

function isPlain(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date) && !(v instanceof RegExp);
}

// streamed returns the handlers for one streamed kind of part (text or
// reasoning): start adds a part, delta appends, end marks it done.
function streamed(kind, mapName) {
  return {
    start(st, c) {
      const part = { type: kind, text: '', state: 'streaming' };
      if (kind === 'reasoning') part.id = c.id;
      st[mapName].set(c.id, part);
      st.message.parts.push(part);
    },
    delta(st, c) {
      const part = st[mapName].get(c.id);
      if (!part) throw new StreamError(`${kind}-delta for "${c.id}", which no ${kind}-start began`);
      part.text += c.delta;
    },
    end(st, c) {
      const part = st[mapName].get(c.id);
      if (!part) throw new StreamError(`${kind}-end for "${c.id}", which no ${kind}-start began`);
      part.state = 'done';
      st[mapName].delete(c.id);
    },
  };
}

const text = streamed('text', 'text');
const reasoning = streamed('reasoning', 'reasoning');

// handlers apply each chunk type, as processUIMessageStream does.
const handlers = {
  'text-start': text.start,
  'text-delta': text.delta,
  'text-end': text.end,
  'reasoning-start': reasoning.start,
  'reasoning-delta': reasoning.delta,
  'reasoning-end': reasoning.end,
  'tool-input-start'(st, c) {
    st.partialTools.set(c.toolCallId, { text: '', toolName: c.toolName, dynamic: c.dynamic, title: c.title });
    st.upsertTool(c, { state: 'input-streaming', input: undefined });
  },
  'tool-input-delta'(st, c) {
    const partial = st.partialTools.get(c.toolCallId);
    if (!partial) throw new StreamError(`tool-input-delta for "${c.toolCallId}", which no tool-input-start began`);
    partial.text += c.inputTextDelta;
    st.upsertTool({ ...partial, toolCallId: c.toolCallId }, { state: 'input-streaming', rawInput: partial.text, input: partialJSON(partial.text) });
  },
  'tool-input-available'(st, c) {
    st.partialTools.delete(c.toolCallId);
    st.upsertTool(c, { state: 'input-available', input: c.input });
  },
  'tool-input-error'(st, c) {
    st.upsertTool(c, { state: 'output-error', input: c.input, errorText: c.errorText });
  },
  'tool-approval-request'(st, c) {
    const part = st.tool(c.toolCallId);
    part.state = 'approval-requested';
    part.approval = { id: c.approvalId };
    if (c.approvalDescriptor != null) part.approval.descriptor = c.approvalDescriptor;
    if (Object.hasOwn(c, 'inputSchemaInput')) part.approval.inputSchemaInput = c.inputSchemaInput;
    if (c.reason != null) part.approval.requestReason = c.reason;
    if (c.isAutomatic === true) part.approval.isAutomatic = true;
    if (c.signature != null) part.approval.signature = c.signature;
  },
  'tool-approval-response'(st, c) {
    const part = st.message.parts.find((p) => isToolPart(p) && p.approval?.id === c.approvalId);
    if (!part) throw new StreamError(`no tool call asked approval "${c.approvalId}"`);
    part.state = 'approval-responded';
    part.approval = { ...part.approval, approved: c.approved, ...(c.reason != null ? { reason: c.reason } : {}) };
  },
  'tool-output-denied'(st, c) {
    st.tool(c.toolCallId).state = 'output-denied';
  },
  'tool-output-available'(st, c) {
    const part = st.tool(c.toolCallId);
    Object.assign(part, { state: 'output-available', output: c.output, preliminary: c.preliminary, errorText: undefined });
    if (c.toolMetadata !== undefined) part.toolMetadata = c.toolMetadata;
  },
  'tool-output-error'(st, c) {
    const part = st.tool(c.toolCallId);
    Object.assign(part, { state: 'output-error', errorText: c.errorText, output: undefined });
    if (c.toolMetadata !== undefined) part.toolMetadata = c.toolMetadata;
  },
  'source-url'(st, c) {
    st.message.parts.push({ type: 'source-url', sourceId: c.sourceId, url: c.url, title: c.title });
  },
  'source-document'(st, c) {
    st.message.parts.push({ type: 'source-document', sourceId: c.sourceId, mediaType: c.mediaType, title: c.title, filename: c.filename });
  },
  file(st, c) {
    st.message.parts.push({ type: 'file', mediaType: c.mediaType, url: c.url });
  },
  'reasoning-file'(st, c) {
    st.message.parts.push({ type: 'reasoning-file', mediaType: c.mediaType, url: c.url });
  },
  custom(st, c) {
    st.message.parts.push({ type: 'custom', kind: c.kind });
  },
  'steering-message'(st, c) {
    st.message.parts.push({ type: 'steering-message', id: c.id, parts: c.parts });
  },
  'start-step'(st) {
    st.message.parts.push({ type: 'step-start' });
  },
  'finish-step'() {},
  'reset-step'(st) {
    const n = st.stepParts().length;
    st.text.clear();
    st.reasoning.clear();
    st.partialTools.clear();
    st.message.parts.splice(st.message.parts.length - n, n);
  },
  start(st, c) {
    if (st.resetOnFirstStart && !st.started) {
      st.message = { id: c.messageId ?? st.message.id, role: 'assistant', parts: [] };
      st.text.clear();
      st.reasoning.clear();
      st.partialTools.clear();
    }
    st.started = true;
    if (c.messageId != null) st.message.id = c.messageId;
    st.metadata(c.messageMetadata);
  },
  finish(st, c) {
    if (c.finishReason != null) st.finishReason = c.finishReason;
    st.metadata(c.messageMetadata);
  },
  abort(st) {
    st.finishReason = st.finishReason ?? 'abort';
  },
  'message-metadata'(st, c) {
    st.metadata(c.messageMetadata);
  },
  error(st, c) {
    st.errorText = c.errorText;
    throw new ErrorChunk(c.errorText);
  },
};

/** partialJSON parses a tool input still streaming, as far as it goes. */
function partialJSON(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * completeWithApprovalResponses is the AI SDK's
 * lastAssistantMessageIsCompleteWithApprovalResponses: the last message
 * is the assistant's, its last step answered at least one approval, and
 * every tool call of that step is answered or done.
 */
export function completeWithApprovalResponses(messages) {
  const m = messages[messages.length - 1];
  if (!m || m.role !== 'assistant') return false;
  let last = -1;
  m.parts.forEach((p, i) => { if (p.type === 'step-start') last = i; });
  const tools = m.parts.slice(last + 1).filter(isToolPart);
  return tools.some((p) => p.state === 'approval-responded')
    && tools.every((p) => (p.state === 'output-available' && p.preliminary !== true)
      || p.state === 'output-error' || p.state === 'output-denied' || p.state === 'approval-responded');
}
