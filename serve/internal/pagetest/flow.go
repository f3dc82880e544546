package pagetest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The prompts of the browser tests: the mock's words (think, plan, edit,
// slow) make it think, plan, ask to edit with a diff, and stream slowly.
const (
	promptSlow  = "slow: please say hello"
	promptEdit  = "think, plan, then edit mock.txt"
	promptLong  = "slow: a long answer to cancel, which streams for about two seconds, one word at a time, so that the cancel lands while it streams even on a busy machine: one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
	promptAfter = "and now a short one"
	promptFail  = "now fail, please"
)

// Exercised is what exercisePage saw that its callers check.
type Exercised struct {
	Session         string // the session reopened from the list
	DiffWhileAsking bool   // the edit's diff showed while it waited for approval
}

// ExercisePage drives the page at base with a browser, as a user would:
// it opens the page with its token, prompts the mock and sees the answer
// stream, approves an edit and sees its diff and the plan, saves a
// screenshot, reopens the session from the list, cancels a slow turn and
// prompts again, and sees a failing turn's error.
func ExercisePage(t *testing.T, b *Browser, base, token string) (ex Exercised) {
	openWithToken(t, b, base, token)
	b.watchStreaming()
	b.Prompt(promptSlow)
	WaitAnswer(b, promptSlow)
	if n := b.streamedLengths(); n < 3 {
		t.Errorf("the answer appeared in %d steps; want it streamed (3 or more)", n)
	}

	b.Prompt(promptEdit)
	b.Wait("the approval buttons", `document.querySelector('.tool[data-state="approval-requested"] button.approve')`)
	// The thought is folded once the parts after it have come; waited for,
	// not read once, since the page renders them in its own time.
	b.Wait("the thought, shown folded", `[...document.querySelectorAll('details.reasoning')].some(d => !d.open && d.textContent.includes('demonstration'))`)
	ex.DiffWhileAsking = EvalJS[bool](b, `document.querySelector('.tool[data-state="approval-requested"] .diff .line.add') !== null`)
	b.Run("approving the edit", ClickQuery(`.tool[data-state="approval-requested"] button.approve`))
	WaitAnswer(b, promptEdit)
	checkDiff(t, b)
	checkPlan(t, b)
	b.screenshot()

	b.Wait("the chat in the session list", `document.querySelector('#sessions li.current')`)
	ex.Session = EvalJS[string](b, `document.querySelector('#sessions li.current').dataset.id`)
	reopen(t, b, ex.Session)
	cancelTurn(t, b)
	failTurn(t, b)
	return ex
}

func Navigate(url string) chromedp.Action[chromedp.Void] { return chromedp.Navigate(url) }

func ClickQuery(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }

// openWithToken opens base/#token=… and checks that the token left the
// address bar for sessionStorage and that the agents are listed.
func openWithToken(t *testing.T, b *Browser, base, token string) {
	b.Run("opening the page", Navigate(base+"/#token="+token))
	b.Wait("the mock in the agent picker", `document.querySelector('#agent option[value="mock"]:checked') !== null`)
	href := EvalJS[string](b, `location.href`)
	stored := EvalJS[string](b, `sessionStorage.getItem('acpbridge.token') ?? ''`)
	if strings.Contains(href, token) || strings.Contains(href, "#") {
		t.Errorf("the address bar still holds the token: %s", href)
	}
	if stored != token {
		t.Errorf("sessionStorage holds %q, want the token", stored)
	}
}

// WaitAnswer waits for the mock's echo of prompt and the turn's end.
func WaitAnswer(b *Browser, prompt string) {
	b.t.Helper()
	b.Wait("the answer to "+JSString(prompt), `[...document.querySelectorAll('.message.assistant .text')].some((e) => e.textContent.includes(`+JSString("You said: "+prompt)+`))
		&& document.querySelector('#status').dataset.status === 'ready'`)
}

// checkDiff checks that the approved edit shows its diff: the mock's
// edit makes "hello" "hello, world".
func checkDiff(t *testing.T, b *Browser) {
	t.Helper()
	b.Wait("the edit's diff", `document.querySelector('.tool .diff .line.add')?.textContent.includes('hello, world')`)
	del := EvalJS[string](b, `document.querySelector('.tool .diff .line.del')?.textContent ?? ''`)
	add := EvalJS[string](b, `document.querySelector('.tool .diff .line.add')?.textContent ?? ''`)
	state := EvalJS[string](b, `document.querySelector('.tool[data-tool-call-id]')?.dataset.state ?? ''`)
	if strings.TrimSpace(del) != "- hello" || strings.TrimSpace(add) != "+ hello, world" {
		t.Errorf("the diff shows %q %q, want \"- hello\" \"+ hello, world\"", del, add)
	}
	if state != "output-available" {
		t.Errorf("the approved edit is in state %q, want output-available", state)
	}
}

// checkPlan checks the turn's plan: the mock's three steps, the last one
// in progress or done.
func checkPlan(t *testing.T, b *Browser) {
	t.Helper()
	steps := EvalJS[[]string](b, `[...[...document.querySelectorAll('.message.assistant')].pop().querySelectorAll('.plan li')].map((li) => li.dataset.status + ' ' + li.textContent)`)
	if len(steps) != 3 || !strings.Contains(steps[0], "completed") || !strings.Contains(steps[2], "Answer the user") {
		t.Errorf("the plan shows %q, want the mock's three steps", steps)
	}
}

// reopen starts a new chat, then reopens the session from the list and
// checks its transcript: both prompts, the answer and the diff.
func reopen(t *testing.T, b *Browser, id string) {
	t.Helper()
	b.Run("starting a new chat", ClickQuery(`#new-chat`))
	b.Wait("an empty chat", `document.querySelectorAll('#messages .message').length === 0`)
	b.Run("reopening the session", ClickQuery(`#sessions li[data-id="`+id+`"] button`))
	WaitAnswer(b, promptSlow)
	b.Wait("the reopened edit's diff", `document.querySelector('.tool .diff .line.add')?.textContent.includes('hello, world')`)
	users := EvalJS[int](b, `document.querySelectorAll('.message.user').length`)
	if users != 2 {
		t.Errorf("the reopened session shows %d prompts, want 2", users)
	}
}

// cancelTurn starts a slow turn in a new chat, cancels it, and prompts
// the chat again.
func cancelTurn(t *testing.T, b *Browser) {
	t.Helper()
	b.Run("starting a new chat", ClickQuery(`#new-chat`))
	b.Prompt(promptLong)
	b.Wait("the slow answer to start", `document.querySelector('.message.assistant .text')?.textContent.length > 0`)
	b.Run("cancelling", ClickQuery(`#cancel`))
	b.Wait("the cancel", `document.querySelector('#status').textContent === 'Cancelled' && document.querySelector('#cancel').hidden`)
	text := EvalJS[string](b, `document.querySelector('.message.assistant .text')?.textContent ?? ''`)
	if strings.Contains(text, "You said: "+promptLong) {
		t.Errorf("the cancelled answer ran to its end: %q", text)
	}
	b.Prompt(promptAfter)
	WaitAnswer(b, promptAfter)
}

// failTurn prompts a turn that fails: the page shows the agent's error.
func failTurn(t *testing.T, b *Browser) {
	t.Helper()
	b.Prompt(promptFail)
	b.Wait("the turn's error", `!document.querySelector('#error').hidden && document.querySelector('#error').textContent.includes('simulated agent failure')
		&& document.querySelector('#status').dataset.status === 'error'`)
}

// promptNotice makes the mock send a notice and compact its context.
const promptNotice = "notice, then compact"

// NoticeAndCompaction prompts the mock for a notice and a compaction in a
// new chat and checks that the page shows both, the compaction folded
// with its summary; reopened from the list, the session shows the
// compaction (history) and not the notice (which is not).
func NoticeAndCompaction(t *testing.T, b *Browser) {
	t.Helper()
	b.Run("starting a new chat", ClickQuery(`#new-chat`))
	b.Prompt(promptNotice)
	WaitAnswer(b, promptNotice)
	b.Wait("the notice", `document.querySelector('.notice.notice-warning')?.textContent.includes('retried')`)
	b.Wait("the compaction, folded", `[...document.querySelectorAll('details.compaction')].some(d => !d.open && d.textContent.includes('Context compacted') && d.textContent.includes('demonstration'))`)
	b.screenshotAs("notice-compaction")
	id := EvalJS[string](b, `document.querySelector('#sessions li.current')?.dataset.id ?? ''`)
	if id == "" {
		b.Wait("the chat in the session list", `document.querySelector('#sessions li.current')`)
		id = EvalJS[string](b, `document.querySelector('#sessions li.current').dataset.id`)
	}
	b.Run("starting a new chat", ClickQuery(`#new-chat`))
	b.Wait("an empty chat", `document.querySelectorAll('#messages .message').length === 0`)
	b.Run("reopening the session", ClickQuery(`#sessions li[data-id="`+id+`"] button`))
	WaitAnswer(b, promptNotice)
	b.Wait("the reopened compaction", `document.querySelector('details.compaction')?.textContent.includes('Context compacted')`)
	if n := EvalJS[int](b, `document.querySelectorAll('.notice').length`); n != 0 {
		t.Errorf("the reopened session shows %d notices; notices are not history", n)
	}
}

// promptDelegate makes the mock delegate to a subagent, which reads, asks
// to edit, and answers.
const promptDelegate = "Please delegate."

// subagentUnderCall is the JS of whether a subagent's fold in state is
// drawn under the tool call that started it (the delegate call), with
// the subagent's tool calls in it.
func subagentUnderCall(state string) string {
	return `[...document.querySelectorAll('.tool[data-tool-call-id] > details.subagent[data-state="` + state + `"]')].some(d =>
		d.parentElement.dataset.toolCallId === d.dataset.toolCallId
		&& d.parentElement.querySelector('.tool-title').textContent.startsWith('Delegate')
		&& d.querySelector('summary').textContent.includes('Delegated task')
		&& d.querySelector('.tool[data-state] .tool-title')?.textContent.startsWith('Read '))`
}

// Subagent prompts the mock to delegate in a new chat and checks that the
// page shows the subagent folded under the delegate tool call, open while
// it works, its edit's approval answerable there; done, the fold holds
// its answer and its edit's diff, and closes; reopened from the list, the
// session shows it under the call again.
func Subagent(t *testing.T, b *Browser) {
	t.Helper()
	b.Run("starting a new chat", ClickQuery(`#new-chat`))
	b.Prompt(promptDelegate)
	b.Wait("the running subagent under its tool call", subagentUnderCall("running")+` && document.querySelector('details.subagent[open] .tool[data-state="approval-requested"] button.approve')`)
	if n := EvalJS[int](b, `document.querySelectorAll('.message.assistant > .tool[data-state="approval-requested"]').length`); n != 0 {
		t.Errorf("the subagent's ask shows %d times beside its subagent; it belongs in it", n)
	}
	b.screenshotAs("subagent-asking")
	b.Run("approving the subagent's edit", ClickQuery(`details.subagent .tool[data-state="approval-requested"] button.approve`))
	WaitAnswer(b, promptDelegate)
	done := subagentUnderCall("idle") + ` && [...document.querySelectorAll('details.subagent[data-state="idle"]')].some(d => !d.open
		&& d.textContent.includes('Done: mock.txt') && d.querySelector('.diff .line.add')?.textContent.includes('hello, world'))`
	b.Wait("the subagent done, folded, with its answer and diff", done)
	id := EvalJS[string](b, `document.querySelector('#sessions li.current')?.dataset.id ?? ''`)
	if id == "" {
		b.Wait("the chat in the session list", `document.querySelector('#sessions li.current')`)
		id = EvalJS[string](b, `document.querySelector('#sessions li.current').dataset.id`)
	}
	b.Run("starting a new chat", ClickQuery(`#new-chat`))
	b.Wait("an empty chat", `document.querySelectorAll('#messages .message').length === 0`)
	b.Run("reopening the session", ClickQuery(`#sessions li[data-id="`+id+`"] button`))
	WaitAnswer(b, promptDelegate)
	b.Wait("the reopened subagent under its tool call", done)
}
