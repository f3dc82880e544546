package web

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
)

// lineSender sends each whole line written as one message, whatever the
// writes' boundaries, and refuses a line that is no message.
func TestLineSender(t *testing.T) {
	reg := core.NewRegistry(core.Limits{}, servetest.Logger())
	got := make(chan string, 10)
	c := reg.NewConn(core.ConnOptions{})
	echo := func(ctx context.Context, r io.Reader, w io.Writer, agent string) error {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			got <- sc.Text()
		}
		return nil
	}
	if err := c.Start(echo); err != nil {
		t.Fatal(err)
	}
	defer func() { c.Close(nil); <-c.Done() }()
	s := &lineSender{c: c}
	for _, w := range []string{`{"jsonrpc":"2.0","method":"a"}` + "\n", `{"jsonrpc":"2.0",`, `"method":"b"}` + "\n" + `{"jsonrpc":"2.0","method":"c"}` + "\n"} {
		if n, err := s.Write([]byte(w)); err != nil || n != len(w) {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	for _, want := range []string{"a", "b", "c"} {
		if line := <-got; !strings.Contains(line, `"method":"`+want+`"`) {
			t.Errorf("sent %q, want method %s", line, want)
		}
	}
	if _, err := s.Write([]byte("not json\n")); err == nil {
		t.Error("a line that is no message was sent")
	}
}

// The map is kept a file per chat: a chat's change writes its own file,
// not the others'. A map kept whole, as before, is moved into such files.
func TestChatStore_filePerChat(t *testing.T) {
	state := t.TempDir()
	legacy, dir := filepath.Join(state, "webchats.json"), filepath.Join(state, "webchats")
	old := `{"chats":{"old":{"session":"s0","cwd":"/"}}}`
	if err := os.WriteFile(legacy, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := openChatStore(dir, legacy, servetest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := st.get("old"); !ok || r.Session != "s0" {
		t.Errorf("the chat of the map kept whole: %+v, %v", r, ok)
	}
	if _, err := os.Stat(legacy); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the map kept whole is still there: %v", err)
	}
	big := strings.Repeat("x", MaxChatID) // the longest id taken
	for i := range 3 {
		if err := st.put(fmt.Sprint(big, i), chatRecord{Session: fmt.Sprint("s", i+1), Cwd: "/"}); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := os.Stat(filepath.Join(dir, ChatFileName("old")))
	if err := st.put(big+"0", chatRecord{Session: "s9", Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(dir, ChatFileName("old")))
	if !os.SameFile(before, after) {
		t.Errorf("changing one chat rewrote another's file")
	}
	if fi, _ := os.Stat(filepath.Join(dir, ChatFileName(big+"0"))); fi == nil || fi.Size() > 2*int64(MaxChatID) {
		t.Errorf("a chat's file: %v, want one of about its id's size", fi)
	}
	st2, err := openChatStore(dir, legacy, servetest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	if len(st2.chats) != 4 || st2.chats[big+"0"].Session != "s9" {
		t.Errorf("reopened: %d chats, %q's %+v", len(st2.chats), "x…0", st2.chats[big+"0"])
	}
}
