package serve

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/pagetest"
	"github.com/acpbridge/acpbridge/serve/page"
	"github.com/chromedp/chromedp"
)

// TestPage_inChromium_fakeChat drives the page in headless Chromium, on
// the Server (its guard, the page at /) with fakeChat, the test double of
// /api/chat and the /v1 lists (awkward SSE framing on purpose), and checks
// what the page sent: the AI SDK's request bodies, the approval as
// addToolApprovalResponse leaves it (and an "always allow" as optionIds),
// the token only in the Authorization header, and the cancel reaching the
// server.
func TestPage_inChromium_fakeChat(t *testing.T) {
	bin := pagetest.Chromium(t)
	const token = "t0k+en/with~odd.chars-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef=="
	fake := newFakeChat(token)
	s, stderr := newServer(t, Options{Token: token})
	// Behind the server's guard, the page and the fake instead of the
	// edges the server mounts.
	mux := http.NewServeMux()
	mux.Handle("/", page.NewHandler(http.HandlerFunc(notFound)))
	mux.Handle("/api/", fake.handler())
	mux.Handle("/v1/", fake.handler())
	s.http.Handler.(*guard).next = mux
	srv := start(t, s, stderr)
	b := pagetest.NewBrowser(t, bin)

	wrongToken(t, b, srv.URL(), token)
	ex := pagetest.ExercisePage(t, b, srv.URL(), token)
	if !ex.DiffWhileAsking {
		t.Error("the edit's diff (in the tool's metadata) did not show while it asked for approval")
	}

	waitCancelled(t, fake)
	alwaysAllow(t, b, fake)

	bodies, urls, unauth, _ := fake.snapshot(t)
	checkBodies(t, bodies)
	fake.mu.Lock()
	mapped := fake.chats[bodies[0].ID]
	fake.mu.Unlock()
	if mapped != ex.Session {
		t.Errorf("the page reopened session %q; its chat %q has session %q", ex.Session, bodies[0].ID, mapped)
	}
	for _, u := range urls {
		if strings.Contains(u, "t0k") {
			t.Errorf("a request's URL holds the token: %s", u)
		}
	}
	if len(unauth) > 0 {
		t.Errorf("API requests without the token: %q", unauth)
	}
	b.CheckClean(token)
}

// checkBodies checks the first chat's three POSTs: two prompts, then the
// approval, as DefaultChatTransport sends them.
func checkBodies(t *testing.T, bodies []chatBody) {
	t.Helper()
	if len(bodies) < 3 {
		t.Fatalf("the fake got %d chat requests, want 3 or more", len(bodies))
	}
	id := bodies[0].ID
	if len(id) != 36 {
		t.Errorf("the chat id %q is no UUID", id)
	}
	for i, b := range bodies[:3] {
		if b.ID != id || b.Trigger != "submit-message" || b.Agent != "mock" {
			t.Errorf("request %d: id %q trigger %q agent %q; want %q, submit-message, mock", i, b.ID, b.Trigger, b.Agent, id)
		}
	}
	if n := len(bodies[2].Messages); n != 4 {
		t.Errorf("the approval carries %d messages, want 4 (two prompts, two answers)", n)
	}
	last := lastPosted(bodies[2].Messages)
	if bodies[2].MessageID == "" || bodies[2].MessageID != last.ID || last.approved() == nil || !*last.approved() {
		t.Errorf("the approval: messageId %q, last message %q with approval %v; want the asking message, approved", bodies[2].MessageID, last.ID, last.approved())
	}
}

// waitCancelled waits for the fake to see the cancelled turn's request end.
func waitCancelled(t *testing.T, fake *fakeChat) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		bodies, _, _, cancelled := fake.snapshot(t)
		last := bodies[len(bodies)-1]
		if slices.Contains(cancelled, last.ID) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not see the cancelled request end (cancelled: %q)", cancelled)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alwaysAllow answers an edit's ask with its "always allow" option, which
// the page sends in the body's optionIds.
func alwaysAllow(t *testing.T, b *pagetest.Browser, fake *fakeChat) {
	t.Helper()
	b.Run("starting a new chat", pagetest.ClickQuery(`#new-chat`))
	const prompt = "edit it again"
	b.Prompt(prompt)
	b.Run("choosing always allow", pagetest.ClickQuery(`.tool[data-state="approval-requested"] button.approve-always`))
	pagetest.WaitAnswer(b, prompt)
	bodies, _, _, _ := fake.snapshot(t)
	body := bodies[len(bodies)-1]
	yes := lastPosted(body.Messages).approved()
	if body.OptionIDs[fakeAskID] != "always" || yes == nil || !*yes {
		t.Errorf("the approval sent optionIds %v, approved %v; want {%s: always}, approved", body.OptionIDs, yes, fakeAskID)
	}
}

// wrongToken opens the page with a wrong token: the server's 401 has the
// page ask for the token, and the one typed in works.
func wrongToken(t *testing.T, b *pagetest.Browser, base, token string) {
	t.Helper()
	b.Run("opening the page with a wrong token", pagetest.Navigate(base+"/#token=wrong"))
	b.Wait("the page to ask for the token", `document.querySelector('#login').open && !sessionStorage.getItem('acpbridge.token')`)
	b.Run("typing the token",
		chromedp.SetValue(chromedp.CSS("#login-token"), token),
		pagetest.ClickQuery(`#login-form button`))
	b.Wait("the agents, with the typed token", `!document.querySelector('#login').open && document.querySelector('#agent option[value="mock"]')`)
	if got := pagetest.EvalJS[string](b, `sessionStorage.getItem('acpbridge.token') ?? ''`); got != token {
		t.Errorf("sessionStorage holds %q after typing the token", got)
	}
	b.ForgetProblems(`status of 401`) // the wrong token's, in the browser's log
}
