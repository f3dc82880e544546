package page

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/pagetest"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
)

// TestPageJS_inChromium runs the page's modules in Chromium on inputs the
// servers may send but the browser tests' turns don't: SSE framing at its
// edges, chunks the chat core refuses, and diffs.
func TestPageJS_inChromium(t *testing.T) {
	bin := pagetest.Chromium(t)
	srv := httptest.NewServer(NewHandler(http.NotFoundHandler()))
	defer srv.Close()
	b := pagetest.NewBrowser(t, bin)
	b.Run("opening the page", pagetest.Navigate(srv.URL+"/"))
	for _, c := range []struct {
		name, script string
		want         any
	}{
		{"SSE framing", `
			const p = new (await import('/stream.js')).SSEParser();
			const out = [];
			for (const piece of ['\ufeffdata: a\r', '\n\r\ndata:b\ndata:  c\n', '\n: a comment\nevent: x\nid: 1\nretry: 5\ndata\n\n',
				'data: [DONE]\r\r', 'data: {"split":', ' true}\n', '\n', 'data: no blank line at the end'])
				out.push(...p.feed(piece));
			return out;`,
			[]any{"a", "b\n c", "", "[DONE]", `{"split": true}`}},
		{"chunks the chat core refuses", `
			const m = await import('/stream.js');
			const refused = [];
			for (const chunks of [
				[{type: 'text-delta', id: 'x', delta: 'no start'}],
				[{type: 'reasoning-end', id: 'x'}],
				[{type: 'tool-output-available', toolCallId: 'nope', output: 1}],
				[{type: 'tool-approval-request', approvalId: 'a', toolCallId: 'nope'}],
				[{type: 'no-such-chunk'}],
				[{type: 'error', errorText: 'the agent failed'}],
			]) {
				const st = new m.MessageState(undefined, 'm1');
				try { chunks.forEach((c) => st.apply(c)); refused.push('accepted'); } catch (e) { refused.push(e.name); }
			}
			return refused;`,
			[]any{"StreamError", "StreamError", "StreamError", "StreamError", "StreamError", "ErrorChunk"}},
		{"a turn's message", `
			const m = await import('/stream.js');
			const st = new m.MessageState(undefined, 'm1');
			for (const c of [
				{type: 'start', messageId: 'msg', messageMetadata: {sessionId: 's'}}, {type: 'start-step'},
				{type: 'reasoning-start', id: 'r'}, {type: 'reasoning-delta', id: 'r', delta: 'hm'}, {type: 'reasoning-end', id: 'r'},
				{type: 'tool-input-start', toolCallId: 'c', toolName: 'edit', dynamic: true, title: 'Edit'},
				{type: 'tool-input-available', toolCallId: 'c', toolName: 'edit', dynamic: true, input: {path: 'f'}},
				{type: 'tool-approval-request', approvalId: 'a', toolCallId: 'c'},
				{type: 'tool-output-available', toolCallId: 'c', output: {ok: true}},
				{type: 'text-start', id: 't'}, {type: 'text-delta', id: 't', delta: 'Hel'}, {type: 'text-delta', id: 't', delta: 'lo'},
				{type: 'text-end', id: 't'}, {type: 'data-plan', id: 'plan', data: {entries: [1]}}, {type: 'data-plan', id: 'plan', data: {entries: [2]}},
				{type: 'finish-step'}, {type: 'finish', finishReason: 'stop', messageMetadata: {usage: {inputTokens: 1}}},
			]) st.apply(c);
			return st.message;`,
			map[string]any{"id": "msg", "role": "assistant", "metadata": map[string]any{"sessionId": "s", "usage": map[string]any{"inputTokens": 1.0}},
				"parts": []any{
					map[string]any{"type": "step-start"},
					map[string]any{"type": "reasoning", "id": "r", "text": "hm", "state": "done"},
					map[string]any{"type": "dynamic-tool", "toolName": "edit", "toolCallId": "c", "title": "Edit", "state": "output-available",
						"input": map[string]any{"path": "f"}, "output": map[string]any{"ok": true}, "approval": map[string]any{"id": "a"}},
					map[string]any{"type": "text", "text": "Hello", "state": "done"},
					map[string]any{"type": "data-plan", "id": "plan", "data": map[string]any{"entries": []any{2.0}}},
				}}},
		{"what an agent sends is text, and only its web links are links", `
			const { Renderer } = await import('/render.js');
			const root = document.createElement('div');
			new Renderer(root, { onApproval() {} }).render([{ id: 'm', role: 'assistant', parts: [
				{ type: 'source-url', sourceId: 'a', url: 'javascript:alert(1)', title: 'bad' },
				{ type: 'source-url', sourceId: 'b', url: 'https://example.com/', title: 'good' },
				{ type: 'file', mediaType: 'image/png', url: '//evil.example/x.png' },
				{ type: 'text', text: '<img src=x onerror=alert(1)>' },
			] }]);
			return [root.querySelectorAll('a').length, root.querySelector('a').href, root.querySelectorAll('img').length,
				root.querySelector('.text').textContent];`,
			[]any{1.0, "https://example.com/", 0.0, "<img src=x onerror=alert(1)>"}},
		{"a diff", `return (await import('/diff.js')).diffLines('a\nb\nc\nd\ne\nf\ng\nh\n', 'a\nB\nc\nd\ne\nf\ng\nH\n', 1).map((l) => l.op + l.text);`,
			[]any{" a", "-b", "+B", " c", "@…", " g", "-h", "+H"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(b.Ctx, pagetest.StepTimeout)
			defer cancel()
			got, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](`(async () => {`+c.script+`})()`, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatalf("%v\n%s", err, b.Describe())
			}
			var v any
			if err := json.Unmarshal(got, &v); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, v); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
