// app.js is the page at /: it chats with the bridge's agents over
// POST /api/chat as the AI SDK's chat core (useChat's AbstractChat with
// DefaultChatTransport) would, lists the sessions of every agent
// (GET /v1/sessions) and reopens one (GET /v1/sessions/{id}/messages).
//
// The token: the server prints http://HOST:PORT/#token=…; the page takes
// it from the fragment (which no request carries), keeps it in
// sessionStorage, removes it from the address bar, and sends it only as
// Authorization: Bearer. It is never logged nor put in a URL.

import { ErrorChunk, MessageState, StreamError, completeWithApprovalResponses, isToolPart, uiChunks } from './stream.js';
import { Renderer, el } from './render.js';

const tokenKey = 'acpbridge.token';
const agentKey = 'acpbridge.agent';

const $ = (id) => document.getElementById(id);

/** AuthError is a 401: the token is missing or wrong. */
class AuthError extends Error {}

/**
 * takeToken moves a #token=… from the address bar into sessionStorage.
 * The fragment is split by hand: URLSearchParams would read a "+" in a
 * token as a space.
 */
function takeToken() {
  const fields = location.hash.slice(1).split('&').filter(Boolean);
  const at = fields.findIndex((f) => f.startsWith('token='));
  if (at >= 0) {
    let t = fields[at].slice('token='.length);
    try {
      t = decodeURIComponent(t);
    } catch { /* not percent-encoded: as it is */ }
    if (t) sessionStorage.setItem(tokenKey, t);
    fields.splice(at, 1);
    const rest = fields.join('&');
    history.replaceState(history.state, '', location.pathname + location.search + (rest ? `#${rest}` : ''));
  }
  return sessionStorage.getItem(tokenKey);
}

/** api fetches path with the token; a 401 asks for a token again. */
async function api(path, init = {}) {
  const token = sessionStorage.getItem(tokenKey);
  const headers = new Headers(init.headers);
  if (token) headers.set('Authorization', `Bearer ${token}`);
  const res = await fetch(path, { ...init, headers, credentials: 'omit', cache: 'no-store' });
  if (res.status === 401) {
    sessionStorage.removeItem(tokenKey);
    askToken('The server refused the token. Paste the token acpbridge serve printed:');
    throw new AuthError('the server wants a token');
  }
  return res;
}

/** httpError says what a failed response said. */
async function httpError(res) {
  let detail = '';
  try {
    detail = (await res.text()).trim();
    const j = JSON.parse(detail);
    detail = j.detail ?? j.error?.message ?? j.error ?? j.message ?? detail;
  } catch { /* plain text */ }
  return `HTTP ${res.status}${detail ? `: ${detail}` : ''}`;
}

async function getJSON(path) {
  const res = await api(path);
  if (!res.ok) throw new Error(`${path}: ${await httpError(res)}`);
  return res.json();
}

/** genID makes an id as the AI SDK's generateId does: 16 letters and digits. */
function genID(n = 16) {
  const abc = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  return Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => abc[b % abc.length]).join('');
}

/** uuid makes a random UUID (crypto.randomUUID needs a secure context; a LAN address is not one). */
function uuid() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * Chat is one conversation: its id is the bridge session's. It keeps the
 * UI messages and runs one request at a time, as AbstractChat does.
 */
class Chat {
  constructor({ id = uuid(), agent = '', messages = [], known = false } = {}) {
    this.id = id;
    this.agent = agent;
    this.messages = messages;
    this.known = known; // the bridge has this session (reopened, or prompted once)
    this.status = 'ready'; // ready | submitted | streaming | error
    this.error = '';
    this.note = ''; // what the last request ended with, when not an error (cancelled)
    this.optionIds = {}; // approval id → the ACP option chosen, for the next request
    this.sentApprovals = new Set(); // the approval ids a request has carried
    this.abort = null; // the AbortController of the request in flight
    this.active = null; // its MessageState
  }

  busy() {
    return this.status === 'submitted' || this.status === 'streaming';
  }

  /**
   * session is the bridge session's id: the chat's own, or the one the
   * bridge named in a response's metadata (a new chat's session gets an
   * id of the bridge's).
   */
  session() {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      const id = this.messages[i].metadata?.sessionId;
      if (typeof id === 'string' && id) return id;
    }
    return this.id;
  }
}

let chat = new Chat();
const renderer = new Renderer($('messages'), { onApproval: answerApproval });
let drawPending = false;

/** draw redraws the chat, at most once a frame. */
function draw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => {
    drawPending = false;
    renderer.render(chat.messages);
    drawStatus();
  });
}

function drawStatus() {
  const busy = chat.busy();
  $('cancel').hidden = !busy;
  $('send').disabled = busy;
  $('new-chat').disabled = busy;
  document.body.classList.toggle('busy', busy);
  const asking = chat.messages.some((m) => m.parts.some((p) => isToolPart(p) && p.state === 'approval-requested'));
  const words = {
    submitted: 'Waiting for the agent…',
    streaming: 'The agent is answering…',
    error: 'Error',
    ready: asking ? 'The agent asks for your approval' : chat.note,
  };
  $('status').textContent = words[chat.status] ?? '';
  $('status').dataset.status = chat.status;
  $('error').hidden = !chat.error;
  $('error').textContent = chat.error;
  $('chat-info').textContent = chat.known || chat.messages.length > 0
    ? `${chat.agent || 'default agent'} · ${chat.session().slice(0, 8)}` : '';
  for (const li of $('sessions').children) li.classList.toggle('current', li.dataset.id === chat.session());
}

/** send prompts the agent with text, as a new user message. */
function send(text) {
  if (chat.busy() || !text.trim()) return;
  if (!chat.known && !chat.agent) chat.agent = $('agent').value;
  chat.messages.push({ id: genID(), role: 'user', parts: [{ type: 'text', text }] });
  draw();
  request({ trigger: 'submit-message' });
}

/**
 * request POSTs the chat to /api/chat and applies the streamed response
 * to the assistant message it answers: a new one, or (messageId, a tool
 * approval's answer) the message that asked.
 */
async function request({ trigger, messageId }) {
  const c = chat;
  const index = messageId != null ? c.messages.findIndex((m) => m.id === messageId) : c.messages.length - 1;
  const original = c.messages[index];
  const state = new MessageState(original, genID());
  const body = { ...bodyFields(c), id: c.id, messages: c.messages, trigger, messageId };
  c.optionIds = {};
  for (const p of c.messages[c.messages.length - 1]?.parts ?? []) {
    if (isToolPart(p) && p.state === 'approval-responded') c.sentApprovals.add(p.approval?.id);
  }
  await run(c, state, original, (signal) => api('/api/chat', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  }));
  if (c === chat && c.status === 'ready' && completeWithApprovalResponses(c.messages) && unsentApprovals(c)) {
    request({ trigger: 'submit-message', messageId: c.messages[c.messages.length - 1].id });
  }
}

/**
 * unsentApprovals is whether the last message answers an approval no
 * request has carried yet: a response that left an answered part as it
 * was must not make the page send it again and again.
 */
function unsentApprovals(c) {
  const parts = c.messages[c.messages.length - 1]?.parts ?? [];
  return parts.some((p) => isToolPart(p) && p.state === 'approval-responded' && !c.sentApprovals.has(p.approval?.id));
}

/**
 * bodyFields are the extra body fields (DefaultChatTransport's body): the
 * chat's agent, and the bridge's optionIds for an approval that chose an
 * option other than the first that allows.
 */
function bodyFields(c) {
  const f = {};
  if (c.agent) f.agent = c.agent;
  if (Object.keys(c.optionIds).length > 0) f.optionIds = c.optionIds;
  return f;
}

/** resume picks up a running turn of a reopened chat (GET /api/chat/{id}/stream; 204: none). */
async function resume() {
  const c = chat;
  const state = new MessageState(undefined, genID(), { resetOnFirstStart: true });
  await run(c, state, undefined, (signal) => api(`/api/chat/${encodeURIComponent(c.id)}/stream`, { signal }), true);
}

/** run makes one request and streams its response into c, setting c.status. */
async function run(c, state, original, fetcher, quietIfAbsent = false) {
  const ac = new AbortController();
  Object.assign(c, { status: 'submitted', error: '', note: '', abort: ac, active: state });
  draw();
  try {
    const res = await fetcher(ac.signal);
    if (quietIfAbsent && (res.status === 204 || res.status === 404 || res.status === 405)) {
      c.status = 'ready';
      return;
    }
    if (!res.ok) throw new Error(await httpError(res));
    if (!res.body) throw new Error('the response has no body');
    c.known = true;
    for await (const chunk of uiChunks(res.body)) {
      state.apply(chunk);
      write(c, state, original);
    }
    c.status = 'ready';
  } catch (e) {
    fail(c, e, ac);
  } finally {
    c.abort = null;
    c.active = null;
    if (c === chat) draw();
    loadSessions();
  }
}

function fail(c, e, ac) {
  if (ac.signal.aborted) {
    Object.assign(c, { status: 'ready', error: '', note: 'Cancelled' });
    return;
  }
  c.status = 'error';
  if (e instanceof AuthError) c.error = 'The server wants a token.';
  else if (e instanceof ErrorChunk) c.error = e.message;
  else if (e instanceof StreamError) c.error = `The server's stream is not what the AI SDK reads: ${e.message}`;
  else c.error = e.message || String(e);
}

/** write puts the streamed message into the chat, as the chat core's write does. */
function write(c, state, original) {
  if (c.status === 'submitted' && state.message.parts.length === 0) return;
  c.status = 'streaming';
  const msg = structuredClone(state.message);
  const at = c.messages.findLastIndex((m) => m.id === msg.id);
  const originalAt = original ? c.messages.findLastIndex((m) => m.id === original.id) : -1;
  const earlier = original?.role === 'assistant' && originalAt >= 0 && originalAt < c.messages.length - 1;
  if (at >= 0) c.messages[at] = msg;
  else if (earlier) c.messages[originalAt] = msg;
  else c.messages.push(msg);
  if (c === chat) draw();
}

/**
 * answerApproval is addToolApprovalResponse: the tool part goes to
 * approval-responded, and once the turn's response has ended and every
 * ask of the step is answered, the chat is sent again carrying it (and
 * optionId, an ACP option such as "always allow", in the body's optionIds).
 */
function answerApproval(messageId, approvalId, approved, optionId) {
  const c = chat;
  if (optionId) c.optionIds[approvalId] = optionId;
  const respond = (parts) => parts.map((p) => (isToolPart(p) && p.state === 'approval-requested' && p.approval?.id === approvalId
    ? { ...p, state: 'approval-responded', approval: { ...p.approval, approved } } : p));
  const i = c.messages.findIndex((m) => m.id === messageId);
  if (i < 0) return;
  c.messages[i] = { ...c.messages[i], parts: respond(c.messages[i].parts) };
  if (c.active) c.active.message.parts = respond(c.active.message.parts);
  draw();
  if (!c.busy() && completeWithApprovalResponses(c.messages) && unsentApprovals(c)) request({ trigger: 'submit-message', messageId });
}

function cancel() {
  chat.abort?.abort();
}

/** newChat starts an empty chat with the picked agent. */
function newChat() {
  if (chat.busy()) return;
  showSessions(false);
  chat = new Chat();
  renderer.clear();
  draw();
  $('prompt').focus();
}

/** reopen shows a session's transcript and picks up its running turn, if any. */
async function reopen(s) {
  if (chat.busy()) return;
  showSessions(false);
  try {
    const got = await getJSON(`/v1/sessions/${encodeURIComponent(s.id)}/messages`);
    const messages = Array.isArray(got) ? got : got.messages ?? [];
    chat = new Chat({ id: s.id, agent: s.agent, messages, known: true });
    renderer.clear();
    draw();
    await resume();
  } catch (e) {
    if (!(e instanceof AuthError)) showError(`Opening the session: ${e.message}`);
  }
}

function showError(text) {
  chat.error = text;
  draw();
}

/** loadAgents fills the agent picker from GET /v1/agents (sandbox-agent's shape). */
async function loadAgents() {
  const sel = $('agent');
  let agents = [];
  try {
    const got = await getJSON('/v1/agents');
    agents = Array.isArray(got) ? got : got.agents ?? [];
  } catch (e) {
    if (e instanceof AuthError) return;
    sel.replaceChildren(el('option', { value: '' }, 'default'));
    return;
  }
  const remembered = sessionStorage.getItem(agentKey);
  const missing = [];
  sel.replaceChildren(...agents.map((a) => {
    const id = a.id ?? a.name ?? String(a);
    const off = a.installed === false;
    const name = a.title || id;
    if (off) missing.push(`${name}: ${a.problem || 'not installed'}`);
    // The label stays short, so the picker fits any width; why an agent
    // is missing is the option's tooltip and the picker's.
    return el('option', { value: id, disabled: off, selected: id === remembered, title: off ? a.problem || 'not installed' : null },
      off ? `${name} (not installed)` : name);
  }));
  sel.title = ['The agent a new chat runs', ...(missing.length ? ['', 'Not installed:', ...missing] : [])].join('\n');
  if (sel.selectedOptions[0]?.disabled) {
    const first = [...sel.options].find((o) => !o.disabled);
    if (first) first.selected = true;
  }
}

/** session normalises an entry of GET /v1/sessions. */
function session(s) {
  return {
    id: s.id ?? s.sessionId,
    agent: s.agent ?? s._meta?.acpbridge?.agent ?? '',
    title: s.title ?? '',
    updatedAt: s.updatedAt ?? s.updated_at ?? '',
  };
}

let loadingSessions = null;

/** loadSessions lists the sessions of every agent, newest first. */
function loadSessions() {
  loadingSessions ??= (async () => {
    try {
      const got = await getJSON('/v1/sessions');
      const list = (Array.isArray(got) ? got : got.sessions ?? []).map(session).filter((s) => s.id);
      $('sessions').replaceChildren(...list.map(sessionItem));
      drawStatus();
    } catch (e) {
      if (!(e instanceof AuthError)) $('sessions').replaceChildren(el('li', { class: 'muted' }, `No list: ${e.message}`));
    } finally {
      loadingSessions = null;
    }
  })();
  return loadingSessions;
}

function sessionItem(s) {
  const when = s.updatedAt ? new Date(s.updatedAt) : null;
  return el('li', { 'data-id': s.id },
    el('button', { type: 'button', onclick: () => reopen(s), title: s.id },
      el('span', { class: 'session-title' }, s.title || s.id.slice(0, 8)),
      el('span', { class: 'session-meta muted' }, [s.agent, when && !isNaN(when) ? when.toLocaleString() : ''].filter(Boolean).join(' · '))));
}

/**
 * showSessions opens or closes the sessions list where it is a drawer
 * (a narrow window); on a wide one it is always shown.
 */
function showSessions(open) {
  document.body.classList.toggle('sessions-open', open);
  $('toggle-sessions').setAttribute('aria-expanded', String(open));
  $('toggle-sessions').title = open ? 'Hide the sessions' : 'Show the sessions';
}

/** askToken shows the token dialog, saying why. */
function askToken(why) {
  const d = $('login');
  if (why) $('login-why').textContent = why;
  if (!d.open) d.showModal();
  $('login-token').focus();
}

function wire() {
  $('composer').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = $('prompt').value;
    if (chat.busy() || !text.trim()) return;
    $('prompt').value = '';
    send(text);
  });
  $('prompt').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('cancel').addEventListener('click', cancel);
  $('new-chat').addEventListener('click', newChat);
  $('refresh-sessions').addEventListener('click', loadSessions);
  $('toggle-sessions').addEventListener('click', () => showSessions(!document.body.classList.contains('sessions-open')));
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') showSessions(false);
  });
  $('agent').addEventListener('change', () => {
    sessionStorage.setItem(agentKey, $('agent').value);
    if (!chat.known && chat.messages.length === 0) chat.agent = '';
  });
  $('login-form').addEventListener('submit', () => {
    const t = $('login-token').value.trim();
    $('login-token').value = '';
    if (!t) return;
    sessionStorage.setItem(tokenKey, t);
    start();
  });
}

function start() {
  loadAgents();
  loadSessions();
  draw();
}

wire();
// A URL with another token opened in this tab changes only the fragment.
window.addEventListener('hashchange', () => {
  if (!location.hash.includes('token=')) return;
  takeToken();
  if ($('login').open) $('login').close();
  start();
});
if (takeToken()) start();
else askToken();
