// diff.js turns an edit's old and new text into the lines of a unified
// diff, for the page to show: Myers' O(ND) line diff, with context.

/** The longest edit script diffLines works out; past it, old and new are shown whole. */
const maxEdits = 1000;

/**
 * diffLines returns the lines of a diff from oldText to newText, each
 * {op: ' ' | '-' | '+' | '@', text}, with `context` unchanged lines around
 * each change ('@' lines separate the hunks).
 */
export function diffLines(oldText, newText, context = 3) {
  const a = splitLines(oldText ?? '');
  const b = splitLines(newText ?? '');
  const ops = myers(a, b) ?? [...a.map((t) => ({ op: '-', text: t })), ...b.map((t) => ({ op: '+', text: t }))];
  return hunks(ops, context);
}

function splitLines(s) {
  if (s === '') return [];
  const lines = s.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

// myers returns the edit script from a to b, or null when it would be
// longer than maxEdits.
function myers(a, b) {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, maxEdits);
  const off = max + 1;
  let v = new Int32Array(2 * max + 3);
  const trace = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = (k === -d || (k !== d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1] : v[off + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) { x++; y++; }
      v[off + k] = x;
      if (x >= n && y >= m) return backtrack(trace, a, b, off, d);
    }
  }
  return null;
}

function backtrack(trace, a, b, off, d) {
  const ops = [];
  let x = a.length;
  let y = b.length;
  for (; d > 0; d--) {
    const v = trace[d];
    const k = x - y;
    const prevK = (k === -d || (k !== d && v[off + k - 1] < v[off + k + 1])) ? k + 1 : k - 1;
    const prevX = v[off + prevK];
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) { ops.push({ op: ' ', text: a[--x] }); y--; }
    if (x === prevX) ops.push({ op: '+', text: b[--y] });
    else ops.push({ op: '-', text: a[--x] });
  }
  while (x > 0) { ops.push({ op: ' ', text: a[--x] }); y--; }
  return ops.reverse();
}

// hunks keeps the changed lines and `context` lines around them, with a
// '@' line where lines are left out.
function hunks(ops, context) {
  const keep = new Uint8Array(ops.length);
  ops.forEach((o, i) => {
    if (o.op === ' ') return;
    for (let j = Math.max(0, i - context); j <= Math.min(ops.length - 1, i + context); j++) keep[j] = 1;
  });
  const out = [];
  let skipped = false;
  ops.forEach((o, i) => {
    if (!keep[i]) { skipped = true; return; }
    if (skipped || (out.length === 0 && i > 0)) out.push({ op: '@', text: '…' });
    skipped = false;
    out.push(o);
  });
  if (skipped && out.length > 0) out.push({ op: '@', text: '…' });
  return out;
}
