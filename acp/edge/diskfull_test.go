//go:build linux

package edge

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/coder/acp-go-sdk"
)

// smallDisk mounts a small tmpfs for the test, or skips saying why (it
// needs root, or the right to mount).
func smallDisk(t *testing.T) string {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("SKIPPED: a full-disk test needs a small tmpfs, and mounting one failed here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) }) // even while a file in it is open
	return dir
}

// fill writes a file until the disk is full, and returns it.
func fill(t *testing.T, dir string) string {
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := bytes.Repeat([]byte("x"), 4096)
	for {
		if _, err := f.Write(block); err != nil {
			break
		}
	}
	for { // and the last bytes
		if _, err := f.Write([]byte("x")); err != nil {
			return path
		}
	}
}

// On a full disk the turn answers an error that says so; nothing
// acknowledged is lost, and once there is room the session goes on.
func TestServer_fullDisk(t *testing.T) {
	dir := smallDisk(t)
	h := start(t, dir)
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	h.MustPrompt(s.SessionId, "first, before the disk fills")
	filler := fill(t, dir)
	// Longer than the page a tmpfs file may still have room in.
	_, err := h.Prompt(s.SessionId, "second, on a full disk "+strings.Repeat("and long ", 4096))
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), "could not be recorded") {
		t.Fatalf("a turn on a full disk: %v, want an error saying the disk is full", err)
	}
	before, _ := os.ReadDir(filepath.Join(dir, "sessions"))
	if _, err := h.CS.NewSession(h.Ctx(), acp.NewSessionRequest{Cwd: "/work", McpServers: []acp.McpServer{}}); err == nil {
		t.Error("session/new on a full disk succeeded")
	}
	if after, _ := os.ReadDir(filepath.Join(dir, "sessions")); len(after) != len(before) {
		t.Errorf("a failed session/new left files: %v, was %v", after, before)
	}
	os.Remove(filler)
	h.MustPrompt(s.SessionId, "third, once there is room")
	h.Stop()

	h2 := start(t, dir)
	h2.Initialize(acp.ClientCapabilities{})
	if _, err := h2.CS.LoadSession(h2.Ctx(), acp.LoadSessionRequest{SessionId: s.SessionId, Cwd: "/work", McpServers: []acp.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	replay := view(h2.Client.Take())
	for _, want := range []string{"first, before the disk fills", "third, once there is room"} {
		if !strings.Contains(replay, want) {
			t.Errorf("the replay lacks %q:\n%s", want, replay)
		}
	}
}

// A state directory the bridge can't write still serves session/load: the
// conversation is replayed, the answer says the session is read-only, and
// a prompt is refused saying why.
func TestServer_readOnlyStateDirStillLoads(t *testing.T) {
	dir := smallDisk(t)
	h := start(t, dir)
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	h.MustPrompt(s.SessionId, "remember this")
	h.Stop()
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("SKIPPED: remounting the tmpfs read-only failed: %v", err)
	}

	h2 := start(t, dir)
	h2.Initialize(acp.ClientCapabilities{})
	r, err := h2.CS.LoadSession(h2.Ctx(), acp.LoadSessionRequest{SessionId: s.SessionId, Cwd: "/work", McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("load from a read-only state directory: %v", err)
	}
	if meta, _ := r.Meta["acpbridge"].(map[string]any); meta["readOnly"] != true {
		t.Errorf("load answer _meta %v, want readOnly", r.Meta)
	}
	if replay := view(h2.Client.Take()); !strings.Contains(replay, "remember this") {
		t.Errorf("replay:\n%s", replay)
	}
	_, err = h2.Prompt(s.SessionId, "go on")
	if err == nil || !strings.Contains(err.Error(), "can be read but not continued here") {
		t.Errorf("prompt in a read-only session: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "sessions")); len(ents) != 2 { // the transcript and its lock, as they were
		t.Errorf("sessions dir: %v", ents)
	}
}
