package pagetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Widths are the window sizes the layout is checked at: a laptop, a wide
// screen and a phone.
var Widths = [][2]int64{{1200, 800}, {1400, 900}, {420, 860}}

// promptLayout makes the mock think, plan and read: a turn with a fold,
// a plan and a tool call with a long path.
const promptLayout = "think, plan, and read the README, please"

// layoutCheck is what the page's layout looks like at one width: what
// scrolls sideways, and what sticks out of the window.
const layoutCheck = `(() => {
	const w = document.documentElement.clientWidth;
	const out = [];
	if (document.documentElement.scrollWidth > w) out.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + w);
	const m = document.querySelector('#messages');
	if (m.scrollWidth > m.clientWidth) out.push('the messages scroll sideways: ' + m.scrollWidth + ' > ' + m.clientWidth);
	for (const e of document.querySelectorAll('#bar > *, #bar select, #composer, #composer *')) {
		const r = e.getBoundingClientRect();
		if (r.width > 0 && (r.right > w + 0.5 || r.left < -0.5)) out.push((e.id || e.tagName.toLowerCase()) + ' sticks out: ' + Math.round(r.left) + '..' + Math.round(r.right) + ' of ' + w);
	}
	return out;
})()`

// CheckLayout opens the page at base with token, runs a turn, and at
// each of Widths checks that nothing scrolls sideways or sticks out of
// the window, and that the sessions list can be reached (on a narrow
// window, from the header's toggle), saving a screenshot at each.
func CheckLayout(t *testing.T, b *Browser, base, token string) {
	t.Helper()
	openWithToken(t, b, base, token)
	b.Prompt(promptLayout)
	WaitAnswer(b, promptLayout)
	b.Wait("the chat in the session list", `document.querySelector('#sessions li.current')`)
	for _, wh := range Widths {
		name := fmt.Sprintf("%dx%d", wh[0], wh[1])
		b.Run("resizing the window to "+name, chromedp.EmulateViewport(wh[0], wh[1]))
		b.Wait("the layout at "+name, fmt.Sprintf(`document.documentElement.clientWidth === %d`, wh[0]))
		if bad := EvalJS[[]string](b, layoutCheck); len(bad) > 0 {
			t.Errorf("at %s:\n  %s", name, strings.Join(bad, "\n  "))
		}
		checkSessionsReachable(t, b, name)
		b.screenshotAs(name)
	}
}

// checkSessionsReachable checks that the sessions list shows, or opens
// from the header's toggle, within the window, and closes again.
func checkSessionsReachable(t *testing.T, b *Browser, name string) {
	t.Helper()
	const shown = `(() => { const r = document.querySelector('#sidebar').getBoundingClientRect();
		return r.width > 0 && r.left >= 0 && r.right <= document.documentElement.clientWidth && document.querySelector('#sessions li') !== null; })()`
	if EvalJS[bool](b, shown) {
		return
	}
	if !EvalJS[bool](b, `((e) => e !== null && getComputedStyle(e).display !== 'none')(document.querySelector('#toggle-sessions'))`) {
		t.Errorf("at %s the sessions list is hidden and there is no toggle to show it", name)
		return
	}
	b.Run("opening the sessions at "+name, ClickQuery(`#toggle-sessions`))
	b.Wait("the sessions list at "+name, shown)
	b.screenshotAs(name + "-sessions")
	b.Run("closing the sessions at "+name, ClickQuery(`#toggle-sessions`))
	b.Wait("the sessions list closed at "+name, `document.querySelector('#sidebar').getBoundingClientRect().width === 0`)
}
