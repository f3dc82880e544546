package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
	"github.com/acpbridge/acpbridge/serve/internal/webtest"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	sdk "github.com/coder/acp-go-sdk"
)

// askWith is an open ask offering options (id:kind).
func askWith(options ...string) *ask {
	var req sdk.RequestPermissionRequest
	for _, o := range options {
		id, kind, _ := strings.Cut(o, ":")
		req.Options = append(req.Options, sdk.PermissionOption{OptionId: sdk.PermissionOptionId(id), Name: id, Kind: sdk.PermissionOptionKind(kind)})
	}
	return newAsk("ask_1", req)
}

// outcomeText is an outcome as "selected X" or "cancelled".
func outcomeText(o sdk.RequestPermissionOutcome) string {
	if o.Selected != nil {
		return "selected " + string(o.Selected.OptionId)
	}
	return "cancelled"
}

// An approval answers the ask with the option the client named, else the
// first that allows (approved) or rejects, else cancelled.
func TestOutcomeOf(t *testing.T) {
	full := []string{"always:allow_always", "once:allow_once", "no:reject_once", "never:reject_always"}
	for _, tc := range []struct {
		name     string
		options  []string
		approved bool
		optionID string
		want     string
		bad      bool
	}{
		{"approved takes allow_once first", full, true, "", "selected once", false},
		{"denied takes reject_once first", full, false, "", "selected no", false},
		{"a named option", full, true, "always", "selected always", false},
		{"a named option that is not the ask's", full, true, "bogus", "", true},
		{"only allow_always", []string{"a:allow_always"}, true, "", "selected a", false},
		{"no option that rejects", []string{"a:allow_once"}, false, "", "cancelled", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := outcomeOf(askWith(tc.options...), tc.approved, tc.optionID)
			if tc.bad {
				if !errors.Is(err, errBadRequest) {
					t.Fatalf("err = %v, want a bad request", err)
				}
				return
			}
			if err != nil || outcomeText(got) != tc.want {
				t.Errorf("got %q, %v; want %q", outcomeText(got), err, tc.want)
			}
		})
	}
}

// Each error a web request can get has its HTTP status.
func TestStatusOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("x: %w", errBadRequest), http.StatusBadRequest},
		{fmt.Errorf("x: %w", errUnknownChat), http.StatusNotFound},
		{fmt.Errorf("x: %w", errNoAsk), http.StatusConflict},
		{errTurnRunning, http.StatusConflict},
		{&sdk.RequestError{Code: -32600, Message: "Invalid request: session busy: a turn runs"}, http.StatusConflict},
		{&sdk.RequestError{Code: -32602, Message: "Invalid params"}, http.StatusBadRequest},
		{errClosed, http.StatusServiceUnavailable},
		{context.Canceled, http.StatusServiceUnavailable},
		{errors.New("anything else"), http.StatusInternalServerError},
	} {
		if got := statusOf(tc.err); got != tc.want {
			t.Errorf("statusOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// lineSender sends each whole line written as one message, whatever the
// writes' boundaries, and refuses a line that is no message.
func TestLineSender(t *testing.T) {
	reg := core.NewRegistry(core.Limits{}, webtest.Logger())
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
	big := strings.Repeat("x", maxChatID) // the longest id taken
	for i := range 3 {
		if err := st.put(fmt.Sprint(big, i), chatRecord{Session: fmt.Sprint("s", i+1), Cwd: "/"}); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := os.Stat(filepath.Join(dir, chatFileName("old")))
	if err := st.put(big+"0", chatRecord{Session: "s9", Cwd: "/"}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(dir, chatFileName("old")))
	if !os.SameFile(before, after) {
		t.Errorf("changing one chat rewrote another's file")
	}
	if fi, _ := os.Stat(filepath.Join(dir, chatFileName(big+"0"))); fi == nil || fi.Size() > 2*int64(maxChatID) {
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
