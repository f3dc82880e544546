// Package pagetest drives headless Chromium for the page's tests
// (Browser), and walks the page through a chat (ExercisePage).
package pagetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// debianChromium is the binary of Debian's chromium-headless-shell
// package. Its /usr/bin/chromium-headless-shell is a shell script that
// runs it as a child, which a kill of the script would leave running.
const debianChromium = "/usr/lib/chromium/chromium-headless-shell"

// Chromium finds the headless Chromium the browser tests drive:
// $CHROMIUM_BIN (any Chromium or Chrome), else Debian's
// Chromium-headless-shell (scripts/install-tools.sh chromium installs it).
// It skips the test loudly when there is none, and fails it with
// ACPBRIDGE_REQUIRE_E2E=1 (scripts/test.sh).
func Chromium(t *testing.T) string {
	t.Helper()
	return toolbin.Find(t, "chromium-headless-shell", "CHROMIUM_BIN", func(string) string {
		if _, err := os.Stat(debianChromium); err == nil {
			return debianChromium
		}
		if p, err := exec.LookPath("chromium-headless-shell"); err == nil {
			return p
		}
		return debianChromium
	})
}

// Browser is one headless Chromium and its tab, stopped (and its profile
// removed) when the test ends.
type Browser struct {
	t   *testing.T
	Ctx context.Context

	mu       sync.Mutex
	problems []string // uncaught exceptions, console errors, errors of the browser's log
	console  []string // every console message
}

// NewBrowser starts Chromium with a profile in the test's temporary
// directory. No sandbox: containers (CI's among them) often lack the
// namespaces Chromium's sandbox needs, and it runs only this test's page.
func NewBrowser(t *testing.T, bin string) *Browser {
	t.Helper()
	b := &Browser{t: t}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox,
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")),
		chromedp.WindowSize(1200, 860),
	)
	actx, stopAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, stopTab := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	b.Ctx = ctx
	// Cleanups run last-in first-out: the browser stops (stopAlloc waits
	// for it) before t.TempDir removes its profile.
	t.Cleanup(func() {
		stopTab()
		stopAlloc()
	})
	agent, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.userAgent`))
	if err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Logf("browser: %s", agent)
	return b
}

// listen keeps the page's console messages, uncaught exceptions and the
// errors of the browser's log (a refused request, a CSP violation). It
// runs in chromedp's reading loop: it only appends.
func (b *Browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil {
			text += " " + d.Exception.Description
		}
		b.problems = append(b.problems, "exception: "+text)
	case *runtime.EventConsoleAPICalled:
		var args []string
		for _, a := range ev.Args {
			args = append(args, strings.TrimSpace(string(a.Value)+" "+a.Description))
		}
		line := string(ev.Type) + ": " + strings.Join(args, " ")
		b.console = append(b.console, line)
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			b.problems = append(b.problems, "console "+line)
		}
	case *cdplog.EventEntryAdded:
		line := fmt.Sprintf("log %s: %s %s", ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
		b.console = append(b.console, line)
		if ev.Entry.Level == cdplog.EntryLevelError {
			b.problems = append(b.problems, line)
		}
	}
}

// StepTimeout bounds each step of a browser test, and
// browserWaitTimeout a wait for the page to show something: deadlines that
// only catch a hang (a page that rendered in 3 s alone once took over the
// 15 s a wait had, beside the rest of the suite).
const (
	StepTimeout        = 75 * time.Second
	browserWaitTimeout = time.Minute
)

// Run runs actions, failing the test with what the page shows if they fail.
func (b *Browser) Run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, StepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\n%s", what, err, b.Describe())
	}
}

// Wait polls a JavaScript expression until it is truthy.
func (b *Browser) Wait(what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, StepTimeout)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool]("!!("+expr+")",
		chromedp.WithPollingTimeout(browserWaitTimeout), chromedp.WithPollingInterval(20*time.Millisecond)))
	if err != nil {
		b.t.Fatalf("waiting for %s: %v\n%s", what, err, b.Describe())
	}
}

// eval evaluates a JavaScript expression in b's page.
func EvalJS[T any](b *Browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, StepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v\n%s", expr, err, b.Describe())
	}
	return v
}

// Describe is what the page shows, for a failure's message.
func (b *Browser) Describe() string {
	ctx, cancel := context.WithTimeout(b.Ctx, 3*time.Second)
	defer cancel()
	// innerText leaves out what a closed <details> holds: the folds are
	// added whole.
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText + '\n\nfolded: ' + [...document.querySelectorAll('details:not([open])')].map(d => d.textContent).join(' | ')`))
	if err != nil {
		text = "(the page's text: " + err.Error() + ")"
	}
	if len(text) > 3000 {
		text = text[:3000] + "…"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("the page says:\n%s\nconsole, log and exceptions:\n%s", text, strings.Join(append(b.console, b.problems...), "\n"))
}

// CheckClean fails the test for any uncaught exception, console error or
// error in the browser's log, and for a console message holding the
// token.
func (b *Browser) CheckClean(token string) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("the page: %s", p)
	}
	for _, c := range b.console {
		if strings.Contains(c, token) {
			b.t.Errorf("the page logged the token: %q", c)
		}
	}
}

// ForgetProblems drops the problems so far that hold text: those a test
// caused on purpose.
func (b *Browser) ForgetProblems(text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = slices.DeleteFunc(b.problems, func(p string) bool { return strings.Contains(p, text) })
}

// screenshot saves a PNG of the page as the test's artifact, named after
// the test: under $ACPBRIDGE_ARTIFACTS/serve if set (scripts/test.sh sets
// it), else in t.ArtifactDir (kept with go test -artifacts -outputdir DIR).
func (b *Browser) screenshot() string {
	b.t.Helper()
	return b.screenshotAs("")
}

// screenshotAs saves a screenshot named after the test and, if not "",
// what it shows.
func (b *Browser) screenshotAs(what string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, StepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("taking a screenshot: %v", err)
	}
	dir := b.t.ArtifactDir()
	if d := os.Getenv("ACPBRIDGE_ARTIFACTS"); d != "" {
		dir = filepath.Join(d, "serve")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	name := strings.ReplaceAll(b.t.Name(), "/", "_")
	if what != "" {
		name += "-" + what
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s (%d bytes)", path, len(png))
	return path
}

// js quotes s as a JavaScript string.
func JSString(s string) string {
	return fmt.Sprintf("%q", s)
}

// Prompt types text into the composer and sends it.
func (b *Browser) Prompt(text string) {
	b.t.Helper()
	b.Wait("the composer to be free", `!document.querySelector('#send').disabled`)
	b.Run("sending "+JSString(text),
		chromedp.SetValue(chromedp.CSS("#prompt"), text),
		chromedp.Click(chromedp.CSS("#send")))
}

// watchStreaming starts counting the distinct lengths the last assistant
// text shows while it streams (streamedLengths reads the count).
func (b *Browser) watchStreaming() {
	b.t.Helper()
	EvalJS[bool](b, `(() => {
		window.__lengths = new Set();
		const seen = () => {
			const t = [...document.querySelectorAll('.message.assistant .text')].pop();
			if (t) window.__lengths.add(t.textContent.length);
		};
		new MutationObserver(seen).observe(document.querySelector('#messages'), {subtree: true, childList: true, characterData: true});
		return true;
	})()`)
}

func (b *Browser) streamedLengths() int {
	b.t.Helper()
	return EvalJS[int](b, `window.__lengths.size`)
}
