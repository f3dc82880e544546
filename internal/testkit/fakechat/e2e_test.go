//go:build unix

// Unix only: the test stops `opencode serve` with SIGTERM to its process
// group, and checks that it exits by it.

package fakechat

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
)

// This test drives the real `opencode serve` (see OpencodeBin) against the
// fake, to check that OpenCode 1.18.33 accepts Home's config and Env and
// the fake's streams.

func TestOpencodeServeSmoke(t *testing.T) {
	bin := OpencodeBin(t)
	fake := New(nil)
	t.Cleanup(fake.Close)
	home := Home(t, fake.URL)
	work := gitWorkspace(t)

	start := time.Now()
	oc := startServe(t, bin, home, work)
	t.Logf("spawn → listening %v (%s)", oc.listening.Sub(start).Round(time.Millisecond), oc.url)

	// Authentication: none, or another user name → 401; basic auth as
	// "opencode" → 200.
	for _, user := range []string{"", "admin"} {
		res, err := oc.do(http.MethodGet, "/global/health", nil, user)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /global/health as %q: %s, want 401", user, res.Status)
		}
	}
	var health struct {
		Healthy bool   `json:"healthy"`
		Version string `json:"version"`
	}
	var err error
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if err = oc.call(http.MethodGet, "/global/health", nil, &health); err == nil && health.Healthy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /global/health: %v %+v\n%s", err, health, oc.stderr.String())
		}
	}
	toolbin.CheckVersion(t, "opencode", health.Version, "1.18.33")
	t.Logf("spawn → healthy %v", time.Since(start).Round(time.Millisecond))

	q := "?directory=" + url.QueryEscape(work)
	var sess struct {
		ID        string `json:"id"`
		Directory string `json:"directory"`
	}
	perm := map[string]any{"permission": []map[string]string{{"permission": "bash", "pattern": "*", "action": "ask"}}}
	if err := oc.call(http.MethodPost, "/session"+q, perm, &sess); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sess.ID, "ses_") || sess.Directory != work {
		t.Fatalf("session %+v", sess)
	}
	events := oc.events(t, "/event"+q)

	// A plain answer; the first prompt also bootstraps the directory's
	// instance and has the title generated.
	prompted := time.Now()
	text := oc.turn(t, events, sess.ID, q, "hello there")
	t.Logf("first prompt → session.idle %v", time.Since(prompted).Round(time.Millisecond))
	if want := AnswerTextPrefix + "hello there"; text != want {
		t.Errorf("streamed text %q, want %q", text, want)
	}

	// A bash call, asked for by the session's rule and allowed once.
	prompted = time.Now()
	text = oc.turn(t, events, sess.ID, q, "run: echo hi")
	t.Logf("bash prompt → session.idle %v", time.Since(prompted).Round(time.Millisecond))
	if want := RunText("echo hi") + FinalTextPrefix + "hi"; text != want {
		t.Errorf("streamed text %q, want %q", text, want)
	}

	// What OpenCode sent the fake: the title's request, and the answers'.
	var title *Request
	var answers []Request
	for _, r := range fake.Requests() {
		if r.Title && title == nil {
			title = &r
		} else if !r.Title {
			answers = append(answers, r)
		}
	}
	if title == nil || !strings.HasPrefix(title.System, "You are a title generator") || title.LastUserText != "hello there" {
		t.Errorf("title request %+v", title)
	}
	if len(answers) != 3 {
		t.Fatalf("%d answer requests, want 3", len(answers))
	}
	a := answers[0]
	if a.LastUserText != "hello there" || a.SessionID != sess.ID || a.Cwd != work || !a.Stream || a.Model != Model ||
		a.Header.Get("Authorization") != "Bearer dummy" {
		t.Errorf("answer request %+v", a)
	}
	for _, tool := range []string{"bash", "edit", "read", "write", "todowrite", "question"} {
		if !a.HasTool(tool) {
			t.Errorf("tools %q lack %s", a.Tools, tool)
		}
	}
	if r := answers[2].Results; len(r) != 1 || r[0].Name != "bash" || r[0].Content != "hi\n" {
		t.Errorf("tool results %+v", r)
	}
	var got struct{ Title string }
	if err := oc.call(http.MethodGet, "/session/"+sess.ID+q, nil, &got); err != nil || got.Title != TitleFor("hello there") {
		t.Errorf("session title %q %v, want %q", got.Title, err, TitleFor("hello there"))
	}
}

// turn prompts session sid with text, allows each permission it asks for
// once, and returns the text streamed until session.idle.
func (oc *serve) turn(t *testing.T, events eventStream, sid, q, text string) string {
	t.Helper()
	body := map[string]any{"parts": []map[string]string{{"type": "text", "text": text}}}
	if err := oc.call(http.MethodPost, "/session/"+sid+"/prompt_async"+q, body, nil); err != nil {
		t.Fatal(err)
	}
	var deltas strings.Builder
	for e := range events.until(t, sid, "session.idle", time.Minute) {
		switch e.Type {
		case "message.part.delta":
			if e.Props.Field == "text" {
				deltas.WriteString(e.Props.Delta)
			}
		case "permission.asked":
			if err := oc.call(http.MethodPost, "/permission/"+e.Props.ID+"/reply"+q, map[string]string{"reply": "once"}, nil); err != nil {
				t.Fatal(err)
			}
		case "session.error":
			t.Errorf("session.error %s", e.Raw)
		}
	}
	return deltas.String()
}

// gitWorkspace is a temporary git repository with one commit: OpenCode
// keys a project by its root commit, and needs git for snapshots.
func gitWorkspace(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	if err := os.WriteFile(work+"/README", []byte("fakechat test workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "README"},
		{"-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "init"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return work
}

// serve is a running `opencode serve`.
type serve struct {
	url       string
	password  string
	listening time.Time
	stderr    *proc.Tail
	client    *http.Client
}

var listeningRE = regexp.MustCompile(`opencode server listening on (http://\S+)`)

// startServe starts `opencode serve` in work with a random password, waits
// for its listening line, and stops its process group when the test ends:
// SIGTERM, then SIGKILL after 5 s.
func startServe(t *testing.T, bin, home, work string) *serve {
	t.Helper()
	oc := &serve{password: rand.Text(), stderr: proc.NewTail(64 << 10), client: &http.Client{Timeout: time.Minute}}
	cmd := exec.Command(bin, "serve", "--port", "0", "--hostname", "127.0.0.1")
	cmd.Dir = work
	cmd.Env = append(Env(home, ConfigPath(home)), "OPENCODE_SERVER_PASSWORD="+oc.password)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = oc.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		stopped := time.Now()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
			t.Logf("SIGTERM → exit %v", time.Since(stopped).Round(time.Millisecond))
		case <-time.After(time.Minute):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			t.Errorf("opencode serve ignored SIGTERM for 5 s")
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case oc.url = <-found:
		oc.listening = time.Now()
	case <-exited:
		t.Fatalf("opencode serve exited before listening:\n%s", oc.stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("opencode serve printed no listening line in 30 s")
	}
	return oc
}

// do sends a request with a JSON body (if any), with basic auth as user
// (and the server's password) unless user is "".
func (oc *serve) do(method, path string, body any, user string) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, oc.url+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.SetBasicAuth(user, oc.password)
	}
	return oc.client.Do(req)
}

// call sends a request as user "opencode" and decodes a 2xx answer into
// out (if not nil).
func (oc *serve) call(method, path string, body, out any) error {
	res, err := oc.do(method, path, body, "opencode")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s %.500s", method, path, res.Status, b)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// event is one event of OpenCode's /event stream, with the properties a
// test looks at.
type event struct {
	Type  string `json:"type"`
	Props struct {
		SessionID string `json:"sessionID"`
		ID        string `json:"id"`
		Field     string `json:"field"`
		Delta     string `json:"delta"`
	} `json:"properties"`
	Raw json.RawMessage `json:"-"`
}

// eventStream is an open /event stream.
type eventStream chan event

// events opens the SSE stream at path, waits for server.connected, and
// closes it when the test ends.
func (oc *serve) events(t *testing.T, path string) eventStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, oc.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("opencode", oc.password)
	res, err := http.DefaultClient.Do(req) // no timeout: the stream lasts
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); res.Body.Close() })
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, res.Status)
	}
	ch := make(eventStream, 1024)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var e event
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				continue
			}
			e.Raw = json.RawMessage(data)
			select {
			case ch <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	select {
	case e := <-ch:
		if e.Type != "server.connected" {
			t.Fatalf("first event %s, want server.connected", e.Raw)
		}
	case <-time.After(time.Minute):
		t.Fatal("no server.connected in 10 s")
	}
	return ch
}

// until yields the events of session sid up to and including the first
// of type last; it fails the test if that does not come within d.
func (ch eventStream) until(t *testing.T, sid, last string, d time.Duration) iter.Seq[event] {
	return func(yield func(event) bool) {
		timeout := time.After(d)
		for {
			select {
			case e, ok := <-ch:
				if !ok {
					t.Fatalf("event stream ended before %s", last)
				}
				if e.Props.SessionID != sid {
					continue
				}
				if !yield(e) || e.Type == last {
					return
				}
			case <-timeout:
				t.Fatalf("no %s in %v", last, d)
			}
		}
	}
}
