package serve

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

// exercised is what exercisePage saw that its callers check.
type exercised struct {
	session         string // the session reopened from the list
	diffWhileAsking bool   // the edit's diff showed while it waited for approval
}

// exercisePage drives the page at base with a browser, as a user would:
// it opens the page with its token, prompts the mock and sees the answer
// stream, approves an edit and sees its diff and the plan, saves a
// screenshot, reopens the session from the list, cancels a slow turn and
// prompts again, and sees a failing turn's error.
func exercisePage(t *testing.T, b *browser, base, token string) (ex exercised) {
	openWithToken(t, b, base, token)
	b.watchStreaming()
	b.prompt(promptSlow)
	waitAnswer(b, promptSlow)
	if n := b.streamedLengths(); n < 3 {
		t.Errorf("the answer appeared in %d steps; want it streamed (3 or more)", n)
	}

	b.prompt(promptEdit)
	b.wait("the approval buttons", `document.querySelector('.tool[data-state="approval-requested"] button.approve')`)
	// The thought is folded once the parts after it have come; waited for,
	// not read once, since the page renders them in its own time.
	b.wait("the thought, shown folded", `[...document.querySelectorAll('details.reasoning')].some(d => !d.open && d.textContent.includes('demonstration'))`)
	ex.diffWhileAsking = evalJS[bool](b, `document.querySelector('.tool[data-state="approval-requested"] .diff .line.add') !== null`)
	b.run("approving the edit", clickQuery(`.tool[data-state="approval-requested"] button.approve`))
	waitAnswer(b, promptEdit)
	checkDiff(t, b)
	checkPlan(t, b)
	b.screenshot()

	b.wait("the chat in the session list", `document.querySelector('#sessions li.current')`)
	ex.session = evalJS[string](b, `document.querySelector('#sessions li.current').dataset.id`)
	reopen(t, b, ex.session)
	cancelTurn(t, b)
	failTurn(t, b)
	return ex
}

func navigate(url string) chromedp.Action[chromedp.Void] { return chromedp.Navigate(url) }

func clickQuery(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }

// openWithToken opens base/#token=… and checks that the token left the
// address bar for sessionStorage and that the agents are listed.
func openWithToken(t *testing.T, b *browser, base, token string) {
	b.run("opening the page", navigate(base+"/#token="+token))
	b.wait("the mock in the agent picker", `document.querySelector('#agent option[value="mock"]:checked') !== null`)
	href := evalJS[string](b, `location.href`)
	stored := evalJS[string](b, `sessionStorage.getItem('acpbridge.token') ?? ''`)
	if strings.Contains(href, token) || strings.Contains(href, "#") {
		t.Errorf("the address bar still holds the token: %s", href)
	}
	if stored != token {
		t.Errorf("sessionStorage holds %q, want the token", stored)
	}
}

// waitAnswer waits for the mock's echo of prompt and the turn's end.
func waitAnswer(b *browser, prompt string) {
	b.t.Helper()
	b.wait("the answer to "+jsString(prompt), `[...document.querySelectorAll('.message.assistant .text')].some((e) => e.textContent.includes(`+jsString("You said: "+prompt)+`))
		&& document.querySelector('#status').dataset.status === 'ready'`)
}

// checkDiff checks that the approved edit shows its diff: the mock's
// edit makes "hello" "hello, world".
func checkDiff(t *testing.T, b *browser) {
	t.Helper()
	b.wait("the edit's diff", `document.querySelector('.tool .diff .line.add')?.textContent.includes('hello, world')`)
	del := evalJS[string](b, `document.querySelector('.tool .diff .line.del')?.textContent ?? ''`)
	add := evalJS[string](b, `document.querySelector('.tool .diff .line.add')?.textContent ?? ''`)
	state := evalJS[string](b, `document.querySelector('.tool[data-tool-call-id]')?.dataset.state ?? ''`)
	if strings.TrimSpace(del) != "- hello" || strings.TrimSpace(add) != "+ hello, world" {
		t.Errorf("the diff shows %q %q, want \"- hello\" \"+ hello, world\"", del, add)
	}
	if state != "output-available" {
		t.Errorf("the approved edit is in state %q, want output-available", state)
	}
}

// checkPlan checks the turn's plan: the mock's three steps, the last one
// in progress or done.
func checkPlan(t *testing.T, b *browser) {
	t.Helper()
	steps := evalJS[[]string](b, `[...[...document.querySelectorAll('.message.assistant')].pop().querySelectorAll('.plan li')].map((li) => li.dataset.status + ' ' + li.textContent)`)
	if len(steps) != 3 || !strings.Contains(steps[0], "completed") || !strings.Contains(steps[2], "Answer the user") {
		t.Errorf("the plan shows %q, want the mock's three steps", steps)
	}
}

// reopen starts a new chat, then reopens the session from the list and
// checks its transcript: both prompts, the answer and the diff.
func reopen(t *testing.T, b *browser, id string) {
	t.Helper()
	b.run("starting a new chat", clickQuery(`#new-chat`))
	b.wait("an empty chat", `document.querySelectorAll('#messages .message').length === 0`)
	b.run("reopening the session", clickQuery(`#sessions li[data-id="`+id+`"] button`))
	waitAnswer(b, promptSlow)
	b.wait("the reopened edit's diff", `document.querySelector('.tool .diff .line.add')?.textContent.includes('hello, world')`)
	users := evalJS[int](b, `document.querySelectorAll('.message.user').length`)
	if users != 2 {
		t.Errorf("the reopened session shows %d prompts, want 2", users)
	}
}

// cancelTurn starts a slow turn in a new chat, cancels it, and prompts
// the chat again.
func cancelTurn(t *testing.T, b *browser) {
	t.Helper()
	b.run("starting a new chat", clickQuery(`#new-chat`))
	b.prompt(promptLong)
	b.wait("the slow answer to start", `document.querySelector('.message.assistant .text')?.textContent.length > 0`)
	b.run("cancelling", clickQuery(`#cancel`))
	b.wait("the cancel", `document.querySelector('#status').textContent === 'Cancelled' && document.querySelector('#cancel').hidden`)
	text := evalJS[string](b, `document.querySelector('.message.assistant .text')?.textContent ?? ''`)
	if strings.Contains(text, "You said: "+promptLong) {
		t.Errorf("the cancelled answer ran to its end: %q", text)
	}
	b.prompt(promptAfter)
	waitAnswer(b, promptAfter)
}

// failTurn prompts a turn that fails: the page shows the agent's error.
func failTurn(t *testing.T, b *browser) {
	t.Helper()
	b.prompt(promptFail)
	b.wait("the turn's error", `!document.querySelector('#error').hidden && document.querySelector('#error').textContent.includes('simulated agent failure')
		&& document.querySelector('#status').dataset.status === 'error'`)
}
