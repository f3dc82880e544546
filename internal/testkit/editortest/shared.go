// Package editortest runs a bridge with one backend (or several) behind
// the one editor harness (package editor), as an editor drives it, for
// backend tests; and holds the checks every agent must pass, run per
// agent.
package editortest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/proc"
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
	pid, _ := server(a)
	if other, _ := server(b); pid == 0 || other != pid {
		t.Fatalf("servers %d and %d; want one shared", pid, other)
	}
	var g errgroup.Group
	g.Go(func() error { _, err := a.Prompt(idA, c.Command); return err })
	g.Go(func() error { _, err := b.Prompt(idB, "Say hello"); return err })
	if err := g.Wait(); err != nil {
		t.Fatal(err)
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
	if got, _ := server(e); got != pid {
		t.Errorf("a bridge after the others left is on server %d; want %d, still running", got, pid)
	}
	if _, err := e.Prompt(id, "Say hello"); err != nil {
		t.Fatal(err)
	}
	_, gone := server(e)
	proc.KillTree(pid)
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the bridge did not see the shared server die")
	}
	if _, err := e.Prompt(id, "Say hello once more"); err != nil {
		t.Fatalf("after the shared server died: %v", err)
	}
	if got, _ := server(e); got == pid || got == 0 {
		t.Errorf("after its death: server %d; want a new one", got)
	}
}
