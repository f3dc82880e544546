// Package editortest runs a bridge with one backend (or several) behind
// the one editor harness (package editor), as an editor drives it, for
// backend tests; and holds the checks every agent must pass, run per
// agent.
package editortest

import (
	"github.com/acpbridge/acpbridge/internal/testkit/syncbuf"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/internal/testkit/testproc"
	"github.com/coder/acp-go-sdk"
	"golang.org/x/sync/errgroup"
)

// SharedServer is a backend whose bridges share one server (--shared),
// for CheckSharedServer.
type SharedServer struct {
	Backend func() agent.Backend                                  // a new one on the shared server
	Server  func(b agent.Backend) (pid int, gone <-chan struct{}) // the server b is on
	Dir     func() string                                         // a new working directory
	// Asking has a session ask the client before it runs a command, and
	// the client allow it.
	Asking  func(e *Editor, id acp.SessionId)
	Command string // a prompt that runs Runs
	Runs    string // a command line that makes File
	File    string
	OneDir  bool // both bridges' sessions in one directory
}

// CheckSharedServer checks that two bridges run their turns at once on
// one server, each asked only for its own session's permissions; that the
// server outlives them for the next bridge; and that one killed is
// started again at the next prompt.
func CheckSharedServer(t *testing.T, c SharedServer) {
	t.Helper()
	backends := map[*Editor]agent.Backend{}
	start := func() *Editor {
		b := c.Backend()
		e := StartEditor(t, b, t.TempDir(), bridge.PersistAuto)
		backends[e] = b
		return e
	}
	server := func(e *Editor) (int, <-chan struct{}) { return c.Server(backends[e]) }
	a, b := start(), start()
	dirA, dirB := c.Dir(), c.Dir()
	if c.OneDir {
		dirB = dirA
	}
	idA, idB := a.NewSession(dirA), b.NewSession(dirB)
	c.Asking(a, idA)
	var g errgroup.Group
	g.Go(func() error { _, err := a.Prompt(idA, c.Command); return err })
	g.Go(func() error { _, err := b.Prompt(idB, "Say hello"); return err })
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	pid, _ := server(a) // running once a turn has run: session/new may answer before
	if other, _ := server(b); pid == 0 || other != pid {
		t.Fatalf("servers %d and %d; want one shared", pid, other)
	}
	if _, err := os.Stat(filepath.Join(dirA, c.File)); err != nil || a.Client.Asked() != 1 || b.Client.Asked() != 0 {
		t.Errorf("asks: %d and %d, want 1 and 0; the command's file: %v", a.Client.Asked(), b.Client.Asked(), err)
	}
	if got := b.Client.Conversation(); !strings.Contains(got, "agent: ") || strings.Contains(got, c.Runs) {
		t.Errorf("the other bridge's conversation:%s", got)
	}

	a.Stop()
	if _, err := b.Prompt(idB, "Say hello again"); err != nil {
		t.Fatalf("after the other bridge left: %v", err)
	}
	b.Stop()
	e := start()
	id := e.NewSession(c.Dir())
	if _, err := e.Prompt(id, "Say hello"); err != nil {
		t.Fatal(err)
	}
	if got, _ := server(e); got != pid {
		t.Errorf("a bridge after the others left is on server %d; want %d, still running", got, pid)
	}
	_, gone := server(e)
	proc.KillTree(pid)
	select {
	case <-gone:
	case <-time.After(time.Minute):
		t.Fatal("the bridge did not see the shared server die")
	}
	if _, err := e.Prompt(id, "Say hello once more"); err != nil {
		t.Fatalf("after the shared server died: %v", err)
	}
	if got, _ := server(e); got == pid || got == 0 {
		t.Errorf("after its death: server %d; want a new one", got)
	}
}

// KeeperKilled is a backend whose bridges share a server kept by a daemon,
// for CheckKeeperKilled.
type KeeperKilled struct {
	Backend func() agent.Backend
	Keeper  func(b agent.Backend) int // the pid of the keeper of the server b is on
	Dir     func() string             // a new working directory
	Slow    string                    // a prompt whose turn streams for seconds
	// Spares is a daemon of spare processes (Claude's): each bridge starts
	// in its session's directory, where it has one warmed up, and the
	// next prompts need no daemon, so none need start again.
	Spares bool
	// Victim, if set, is the pid to kill in the keeper's place: a process
	// the keeper runs (the spares server, say), killed on its own.
	Victim func(b agent.Backend) int
}

// CheckKeeperKilled checks that a keeper (or c.Victim) SIGKILLed while
// two bridges' turns run on its server ends both turns at once with an
// error that names the shared server; that their next prompts run on a new one; and
// that nothing recorded is lost: a new bridge loads each session whole.
func CheckKeeperKilled(t *testing.T, c KeeperKilled) {
	t.Helper()
	states := []string{t.TempDir(), t.TempDir()}
	var eds []*Editor
	var ids []acp.SessionId
	var dirs []string
	var backend agent.Backend
	for _, st := range states {
		b, dir := c.Backend(), c.Dir()
		cwd := "" // where the bridge starts
		if c.Spares {
			cwd = dir
		}
		e := StartEditorIn(t, b, st, bridge.PersistAlways, cwd)
		eds, ids, dirs, backend = append(eds, e), append(ids, e.NewSession(dir)), append(dirs, dir), b
	}
	for i, e := range eds { // each agent up, so that the slow turns run at once even on a loaded machine
		if _, err := e.Prompt(ids[i], "Say hi first"); err != nil {
			t.Fatal(err)
		}
		e.Client.Take()
	}
	errs := make(chan error, 2)
	for i, e := range eds {
		go func() { _, err := e.Prompt(ids[i], c.Slow); errs <- err }()
	}
	for _, e := range eds {
		e.WaitFor(func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil })
	}
	keeper, victim := c.Keeper(backend), 0
	if keeper <= 1 {
		t.Fatalf("keeper pid %d", keeper)
	}
	if victim = keeper; c.Victim != nil {
		victim = c.Victim(backend)
	}
	if victim <= 1 {
		t.Fatalf("pid %d to kill", victim)
	}
	testproc.Kill(victim)
	// Ended by the keeper's death, not by their own end: with an error.
	for range eds {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "shared") {
			t.Errorf("a turn on the killed keeper's server: %v; want an error naming the shared server", err)
		}
	}
	for i, e := range eds {
		if _, err := e.Prompt(ids[i], "Say hello"); err != nil {
			t.Fatalf("the next prompt after the keeper's death: %v", err)
		}
	}
	if k := c.Keeper(backend); !c.Spares && (k == keeper || k <= 1) {
		t.Errorf("keeper %d after the killed %d; want a new one", k, keeper)
	}
	for _, e := range eds {
		e.Stop()
	}
	for i, st := range states {
		checkReplay(t, StartEditor(t, c.Backend(), st, bridge.PersistAlways), ids[i], dirs[i], c.Slow)
	}
}

// checkReplay loads session id (in dir) in e and checks that it holds the prompt
// whose turn was cut short, what that turn streamed, and the next turn.
func checkReplay(t *testing.T, e *Editor, id acp.SessionId, dir, cut string) {
	t.Helper()
	e.Load(id, dir)
	got := e.Client.Conversation()
	first, next := strings.Index(got, "user: "+cut), strings.Index(got, "user: Say hello")
	streamed := strings.Index(got[max(first, 0):], "\nagent: ")
	if first < 0 || next < first || streamed < 0 || first+streamed > next || !strings.Contains(got[next:], "agent: ") {
		t.Errorf("replay after the keeper's death:%s\nwant the cut turn (its prompt, what it streamed) and the next", got)
	}
	e.Stop()
}

// NoDaemon is a backend told to share its server (or spares) through
// daemons under a root it can't use, for CheckNoDaemon.
type NoDaemon struct {
	// Backend is a backend with its daemons under root, logging to log.
	Backend func(root string, log *slog.Logger) agent.Backend
	Dir     func() string // a new working directory
}

// CheckNoDaemon checks that a bridge whose daemons' directory is
// read-only (or not a directory at all) runs its agent itself: its
// sessions' turns work, and it says so once, in one warning.
func CheckNoDaemon(t *testing.T, c NoDaemon) {
	t.Helper()
	var logs syncbuf.Buffer
	root := ReadOnlyRoot(t)
	e := StartEditor(t, c.Backend(root, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))), t.TempDir(), bridge.PersistAuto)
	for range 2 {
		id := e.NewSession(c.Dir())
		if _, err := e.Prompt(id, "Say hello"); err != nil {
			t.Fatalf("a turn with no daemon to be had: %v\nlog:\n%s", err, logs.String())
		}
	}
	e.Stop()
	if n := strings.Count(logs.String(), "level=WARN msg=\"no shared "); n != 1 {
		t.Errorf("%d warnings of no shared server; want 1. The log:\n%s", n, logs.String())
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("%d entries made in the read-only %s", len(ents), root)
	}
}

// ReadOnlyRoot is a directory of daemons that can't be made: under a
// directory without write permission, or, for root, whom permissions
// don't stop, under a file.
func ReadOnlyRoot(t *testing.T) string {
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		file := filepath.Join(dir, "file")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(file, "daemons")
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	return filepath.Join(dir, "daemons")
}
