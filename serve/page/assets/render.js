// render.js draws UI messages (the AI SDK's UIMessage) as DOM: text,
// thoughts folded, tool calls with their diffs, output and approval
// buttons, the plan, notices, compactions, and subagents folded under the
// tool calls that started them. Every text goes in through textContent.

import { diffLines } from './diff.js';
import { isToolPart, toolName } from './stream.js';

/** el makes an element with attributes (on* are listeners) and children. */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c == null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

/**
 * Renderer keeps #messages in step with a chat's messages, redrawing only
 * the messages that changed and keeping which folds the user opened.
 */
export class Renderer {
  constructor(root, { onApproval }) {
    this.root = root;
    this.onApproval = onApproval;
    this.drawn = new Map(); // message id → {json, node}
    this.open = new Map(); // fold key → open, where the user toggled it
  }

  /** render draws messages, keeping the view at the bottom if it was there. */
  render(messages) {
    const nearBottom = this.root.scrollHeight - this.root.scrollTop - this.root.clientHeight < 80;
    const keep = new Set();
    let prev = null;
    for (const m of messages) {
      keep.add(m.id);
      const json = JSON.stringify(m);
      let d = this.drawn.get(m.id);
      if (!d || d.json !== json) {
        const node = this.message(m);
        if (d) d.node.replaceWith(node);
        d = { json, node };
        this.drawn.set(m.id, d);
      }
      const want = prev ? prev.nextSibling : this.root.firstChild;
      if (want !== d.node) this.root.insertBefore(d.node, want);
      prev = d.node;
    }
    for (const [id, d] of this.drawn) {
      if (!keep.has(id)) {
        d.node.remove();
        this.drawn.delete(id);
      }
    }
    if (nearBottom) this.root.scrollTop = this.root.scrollHeight;
  }

  /** clear forgets every drawn message (another chat is shown). */
  clear() {
    this.root.replaceChildren();
    this.drawn.clear();
    this.open.clear();
  }

  message(m) {
    const subs = subagentsOf(m);
    const parts = m.parts.map((p, i) => this.part(m, p, `${m.id}:${i}`, subs)).filter(Boolean);
    const usage = usageLine(m.metadata);
    return el('article', { class: `message ${m.role}`, 'data-id': m.id, 'data-role': m.role },
      el('div', { class: 'who' }, m.role === 'user' ? 'You' : m.role === 'assistant' ? 'Agent' : m.role),
      parts, usage && el('div', { class: 'usage muted' }, usage));
  }

  part(m, p, key, subs) {
    if (p.type === 'text') return el('div', { class: 'text' }, p.text);
    if (p.type === 'reasoning') return this.fold(key, 'reasoning', false, `Thought${p.state === 'streaming' ? '…' : ''}`, el('div', { class: 'text' }, p.text));
    if (isToolPart(p)) return subs.byID.has(p.toolMetadata?.subagent) ? null : this.toolWithSubagents(m, p, key, subs, 0);
    if (p.type === 'data-subagent') return subs.nested(p.data) ? null : this.subagent(m, p.data, subs, 0);
    if (p.type === 'data-plan') return plan(p.data);
    if (p.type === 'data-notice') return notice(p.data);
    if (p.type === 'data-compaction') return this.compaction(p.data, key);
    if (p.type === 'file') return file(p);
    if (p.type === 'source-url') return el('div', { class: 'source' }, link(p.url, p.title || p.url));
    return null; // step-start, other data parts, custom: nothing to show
  }

  /** compaction draws a data-compaction part: its state, and its summary folded. */
  compaction(data, key) {
    const status = String(data?.status ?? 'in_progress');
    const words = { in_progress: 'Compacting the context…', completed: 'Context compacted', failed: 'Compacting the context failed', cancelled: 'Compacting the context was cancelled' };
    const head = words[status] ?? `Context compaction: ${status}`;
    const body = [];
    if (data?.error) body.push(el('div', { class: 'tool-error' }, String(data.error)));
    if (data?.summary) body.push(el('div', { class: 'text' }, String(data.summary)));
    if (body.length === 0) return el('div', { class: 'compaction', 'data-status': status }, head);
    return this.fold(key, 'compaction', false, head, ...body);
  }

  /** toolWithSubagents draws a tool part with the subagents it started folded under it. */
  toolWithSubagents(m, p, key, subs, depth) {
    const node = this.tool(m, p, key);
    if (depth < 4) for (const d of subs.byTool.get(p.toolCallId) ?? []) node.append(this.subagent(m, d, subs, depth));
    return node;
  }

  /**
   * subagent draws a data-subagent part's subagent: a fold, open while it
   * works, with its title, state and description, and its work inside (a
   * tool call it was asked about drawn from the message's own part of it,
   * which carries the approval).
   */
  subagent(m, d, subs, depth) {
    const state = String(d?.state ?? 'unknown');
    const asking = (d.parts ?? []).some((p) => isToolPart(p) && p.state === 'approval-requested');
    const label = asking ? 'needs approval' : state === 'idle' ? (!d.stopReason || d.stopReason === 'end_turn' ? 'done' : String(d.stopReason)) : state.replace('_', ' ');
    const head = [el('span', { class: `badge subagent-state subagent-${state}` }, label),
      el('span', { class: 'subagent-title' }, String(d.title || 'Subagent')),
      d.description ? el('span', { class: 'muted subagent-description' }, String(d.description)) : null];
    const key = `${m.id}:subagent:${d.id}`;
    const body = [];
    if (d.error) body.push(el('div', { class: 'tool-error' }, String(d.error)));
    (d.parts ?? []).forEach((p, i) => body.push(this.subagentPart(m, d, p, `${key}:${i}`, subs, depth)));
    const fold = this.fold(key, 'subagent', state !== 'idle' || asking, head, ...body.filter(Boolean));
    fold.dataset.subagentId = String(d.id ?? '');
    fold.dataset.state = state;
    fold.dataset.toolCallId = String(d.toolCallId ?? '');
    return fold;
  }

  subagentPart(m, d, p, key, subs, depth) {
    if (p.type === 'prompt') return p.text === d.description ? null : el('div', { class: 'subagent-prompt muted' }, p.text);
    if (p.type === 'message') return el('div', { class: 'subagent-message muted' }, `${p.direction === 'out' ? '← ' : '→ '}${p.text ?? ''}`);
    if (isToolPart(p)) return this.toolWithSubagents(m, subs.asked.get(`${d.id}/${p.toolCallId}`) ?? p, key, subs, depth + 1);
    return this.part(m, p, key, subs);
  }

  /** fold is a <details> whose open state survives redraws once the user toggles it. */
  fold(key, cls, openByDefault, summary, ...body) {
    const d = el('details', { class: cls, 'data-key': key }, el('summary', {}, summary), ...body);
    d.open = this.open.has(key) ? this.open.get(key) : openByDefault;
    // Setting open fires a toggle too: only the user's change is kept.
    const drawn = d.open;
    d.addEventListener('toggle', () => {
      if (d.open !== drawn || this.open.has(key)) this.open.set(key, d.open);
    });
    return d;
  }

  tool(m, p, key) {
    const kind = p.toolMetadata?.kind;
    const title = p.title || toolName(p);
    const diffs = findDiffs([p.output, p.toolMetadata, p.approval?.descriptor, p.input]);
    const head = el('div', { class: 'tool-head' },
      el('span', { class: `badge state-${p.state}` }, stateLabel(p)),
      kind && el('span', { class: 'kind muted' }, kind),
      el('span', { class: 'tool-title' }, title));
    const body = [];
    for (const d of diffs) body.push(diffView(d));
    if (p.state === 'approval-requested') body.push(this.approval(m, p));
    if (p.state === 'approval-responded' || p.approval?.approved === false) {
      body.push(el('div', { class: 'approval-answer muted' }, p.approval?.approved ? 'Approved' : 'Denied'));
    }
    if (p.errorText) body.push(el('pre', { class: 'tool-error' }, p.errorText));
    if (p.input !== undefined) body.push(this.fold(`${key}:in`, 'tool-input', false, 'Input', el('pre', {}, pretty(p.input))));
    const out = outputText(p.output);
    if (out) body.push(this.fold(`${key}:out`, 'tool-output', out.length < 400, 'Output', el('pre', {}, out)));
    return el('div', { class: 'tool', 'data-tool-call-id': p.toolCallId, 'data-state': p.state }, head, body);
  }

  /**
   * approval is the ask's buttons: Approve and Deny, and Always allow when
   * the ask offers it (the bridge's descriptor lists the ACP options).
   */
  approval(m, p) {
    const answer = (approved, optionId) => () => this.onApproval(m.id, p.approval.id, approved, optionId);
    const options = Array.isArray(p.approval?.descriptor?.options) ? p.approval.descriptor.options : [];
    const always = options.find((o) => o?.kind === 'allow_always');
    return el('div', { class: 'approval' },
      el('span', {}, p.approval?.requestReason || 'The agent asks to run this.'),
      el('button', { type: 'button', class: 'approve', onclick: answer(true) }, 'Approve'),
      always && el('button', { type: 'button', class: 'approve-always', title: always.name ?? '', onclick: answer(true, always.optionId) }, 'Always allow'),
      el('button', { type: 'button', class: 'deny', onclick: answer(false) }, 'Deny'));
  }
}

/**
 * subagentsOf indexes a message's subagents (its data-subagent parts): by
 * id, by the tool call that started them, and the message's tool parts of
 * their calls asked about (toolMetadata.subagent). nested says whether a
 * subagent is drawn under a tool call of the message.
 */
function subagentsOf(m) {
  const byID = new Map();
  const byTool = new Map();
  const asked = new Map();
  const tools = new Set();
  for (const p of m.parts) {
    if (p.type === 'data-subagent' && p.data) {
      byID.set(p.data.id, p.data);
      if (!byTool.has(p.data.toolCallId)) byTool.set(p.data.toolCallId, []);
      byTool.get(p.data.toolCallId).push(p.data);
      for (const c of p.data.parts ?? []) if (isToolPart(c)) tools.add(c.toolCallId);
    } else if (isToolPart(p)) {
      if (p.toolMetadata?.subagent) asked.set(p.toolCallId, p);
      else tools.add(p.toolCallId);
    }
  }
  return { byID, byTool, asked, nested: (d) => d.toolCallId != null && tools.has(d.toolCallId) };
}

function stateLabel(p) {
  switch (p.state) {
    case 'input-streaming': return 'preparing';
    case 'input-available': return 'running';
    case 'approval-requested': return 'needs approval';
    case 'approval-responded': return p.approval?.approved ? 'approved' : 'denied';
    case 'output-available': return p.preliminary ? 'running' : 'done';
    case 'output-error': return 'failed';
    case 'output-denied': return 'denied';
    default: return p.state ?? '';
  }
}

/** findDiffs collects the edits in a tool call's values: objects with a path and new text (ACP's diff content). */
export function findDiffs(values) {
  const found = [];
  const seen = new Set();
  const walk = (v, depth) => {
    if (v == null || typeof v !== 'object' || depth > 6) return;
    if (Array.isArray(v)) {
      v.forEach((x) => walk(x, depth + 1));
      return;
    }
    if (typeof v.newText === 'string' && (v.type === 'diff' || typeof v.path === 'string')) {
      const k = `${v.path}\u0000${v.oldText ?? ''}\u0000${v.newText}`;
      if (!seen.has(k)) {
        seen.add(k);
        found.push({ path: v.path ?? '', oldText: v.oldText ?? '', newText: v.newText });
      }
      return;
    }
    for (const x of Object.values(v)) walk(x, depth + 1);
  };
  values.forEach((v) => walk(v, 0));
  return found;
}

function diffView(d) {
  const lines = diffLines(d.oldText, d.newText);
  return el('div', { class: 'diff', 'data-path': d.path },
    el('div', { class: 'diff-path' }, d.path || '(edit)'),
    el('pre', {}, lines.map((l) => el('span', { class: `line ${lineClass(l.op)}` }, `${l.op === '@' ? '' : l.op} ${l.text}\n`))));
}

function lineClass(op) {
  return op === '+' ? 'add' : op === '-' ? 'del' : op === '@' ? 'gap' : 'same';
}

/**
 * outputText is what a tool call's output says beyond its diffs (drawn
 * apart): its text content, else the rest of it as JSON.
 */
function outputText(output) {
  if (output == null) return '';
  if (typeof output === 'string') return output;
  const blocks = Array.isArray(output.content) ? output.content : Array.isArray(output) ? output : null;
  const texts = [];
  for (const b of blocks ?? []) {
    const t = b?.content?.text ?? (b?.type === 'text' ? b.text : undefined);
    if (typeof t === 'string') texts.push(t);
    else if (b?.type === 'terminal') texts.push(`(terminal ${b.terminalId})`);
  }
  if (texts.length > 0) return texts.join('\n');
  if (Array.isArray(output)) return blocks.every((b) => b?.type === 'diff') ? '' : pretty(output);
  const rest = { ...output };
  if (Array.isArray(rest.content) && rest.content.every((b) => b?.type === 'diff')) delete rest.content;
  delete rest.status;
  delete rest.locations; // the title names them
  const keys = Object.keys(rest);
  if (keys.length === 0) return '';
  return pretty(keys.length === 1 && keys[0] === 'rawOutput' ? rest.rawOutput : rest);
}

function pretty(v) {
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v, null, 2) ?? '';
  } catch {
    return String(v);
  }
}

/** notice draws a data-notice part: an agent's notice (a retry, a limit), by its severity. */
function notice(data) {
  const severity = ['info', 'warning', 'error'].includes(data?.severity) ? data.severity : 'info';
  return el('div', { class: `notice notice-${severity}`, role: severity === 'error' ? 'alert' : 'status', 'data-severity': severity },
    el('span', { class: 'notice-title' }, String(data?.title ?? '')),
    data?.description ? el('span', { class: 'muted' }, ' — ' + String(data.description)) : null);
}

const planMarks = { completed: '✓', in_progress: '▶', pending: '○' };

/** plan draws a data-plan part: ACP's plan entries ({entries: [...]}, or the list itself). */
function plan(data) {
  const entries = Array.isArray(data) ? data : Array.isArray(data?.entries) ? data.entries : [];
  return el('div', { class: 'plan' }, el('div', { class: 'plan-head' }, 'Plan'),
    el('ol', {}, entries.map((e) => el('li', { class: `plan-${e.status ?? 'pending'}`, 'data-status': e.status ?? 'pending' },
      el('span', { class: 'mark' }, planMarks[e.status] ?? '○'), el('span', { class: 'entry' }, e.content ?? e.title ?? pretty(e))))));
}

function file(p) {
  if (p.mediaType?.startsWith('image') && /^data:image\/|^\/(?!\/)/.test(p.url ?? '')) return el('img', { class: 'file', src: p.url, alt: p.filename ?? 'image' });
  return el('div', { class: 'file' }, link(p.url, p.filename || p.mediaType || 'file'));
}

/** link is a link to an agent's URL if it is a web or mail one; anything else (javascript:, data:) is shown as text. */
function link(url, label) {
  if (!/^(https?|mailto):/i.test(url ?? '')) return el('span', { class: 'muted', title: String(url ?? '') }, label);
  return el('a', { href: url, rel: 'noopener noreferrer', target: '_blank' }, label);
}

/** usageLine says a message's token usage, if its metadata has any. */
function usageLine(meta) {
  const u = meta?.usage ?? meta;
  const inT = u?.inputTokens ?? u?.input_tokens;
  const outT = u?.outputTokens ?? u?.output_tokens;
  if (inT == null && outT == null) return '';
  return `tokens: ${inT ?? '?'} in, ${outT ?? '?'} out`;
}
