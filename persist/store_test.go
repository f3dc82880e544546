package persist

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func header(id string) Header {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	return Header{ID: id, Agent: "mock", Cwd: "/work", CreatedAt: now, UpdatedAt: now}
}

func text(seq int64, s string) Entry {
	return entry(seq, acp.UpdateAgentMessageText(s))
}

func entry(seq int64, u acp.SessionUpdate) Entry {
	b, err := json.Marshal(u)
	if err != nil {
		panic(err)
	}
	return Entry{Seq: seq, Update: b}
}

func TestStore_appendAndRead(t *testing.T) {
	s := newStore(t)
	w, err := s.Create(header("s1"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		entry(1, acp.UpdateUserMessageText("hi")),
		text(2, "hello"),
		entry(3, acp.StartToolCall("t1", "Read x", acp.WithStartKind(acp.ToolKindRead), acp.WithStartStatus(acp.ToolCallStatusCompleted))),
		entry(4, acp.StartToolCall("t2", "Read y", acp.WithStartKind(acp.ToolKindRead), acp.WithStartStatus(acp.ToolCallStatusCompleted))),
		text(5, "a subagent's answer"),
	}
	want[2].Tool = "t1"
	want[3].Tool, want[3].Session = "t2", "task-1" // a child's entries carry its native id
	want[4].Session = "task-1"
	if err := w.Append(want...); err != nil {
		t.Fatal(err)
	}
	h := header("s1")
	h.Title = "hi"
	if err := w.SetHeader(h); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tr, err := s.Read("s1")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Header.Title != "hi" {
		t.Errorf("title = %q, want the last header's", tr.Header.Title)
	}
	if diff := cmp.Diff(want, tr.Entries); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

func TestStore_tornTailIgnoredAndCut(t *testing.T) {
	s := newStore(t)
	w, err := s.Create(header("s1"))
	if err != nil {
		t.Fatal(err)
	}
	w.Append(text(1, "kept"))
	w.Close()
	f, _ := os.OpenFile(s.path("s1", ".jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"seq":2,"update":{"sessionUpdate":"agent_mess`)
	f.Close()

	tr, err := s.Read("s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 1 {
		t.Fatalf("got %d entries, want the 1 before the torn line", len(tr.Entries))
	}
	w, _, err = s.OpenWriter("s1")
	if err != nil {
		t.Fatal(err)
	}
	w.Append(text(3, "after"))
	w.Close()
	tr, err = s.Read("s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 2 || tr.Skipped != 0 {
		t.Errorf("after reopen: %d entries, %d skipped; want 2, 0 (torn tail cut)", len(tr.Entries), tr.Skipped)
	}
}

func TestStore_secondOpenIsRefused(t *testing.T) {
	s := newStore(t)
	w, err := s.Create(header("s1"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	other, _ := Open(s.Dir())
	_, _, err = other.OpenWriter("s1")
	var le *LockedError
	if !errors.As(err, &le) || le.PID != itoa(os.Getpid()) {
		t.Fatalf("OpenWriter while open = %v, want LockedError naming pid %d", err, os.Getpid())
	}
	if err := other.Delete("s1"); !errors.As(err, &le) {
		t.Errorf("Delete while open = %v, want LockedError", err)
	}
	w.Close()
	w2, _, err := other.OpenWriter("s1")
	if err != nil {
		t.Fatalf("OpenWriter after close: %v", err)
	}
	w2.Close()
}

func TestStore_invalidIDsNeverTouchDisk(t *testing.T) {
	s := newStore(t)
	for _, id := range []string{"", "../x", "/etc/passwd", "a/b", `a\b`, "a\x00b", "..", ".hidden", "x.jsonl", string(make([]byte, 200))} {
		if _, err := s.Create(header(id)); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Create(%q) = %v, want ErrInvalidID", id, err)
		}
		if _, err := s.Read(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Read(%q) = %v, want ErrInvalidID", id, err)
		}
		if err := s.Delete(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidID", id, err)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(s.Dir(), "sessions"))
	if len(ents) != 0 {
		t.Errorf("sessions dir has %d files, want none", len(ents))
	}
}

func TestStore_listDeleteAndRebuild(t *testing.T) {
	s := newStore(t)
	for _, id := range []string{"a", "b", "c"} {
		w, err := s.Create(header(id))
		if err != nil {
			t.Fatal(err)
		}
		h := header(id)
		h.Title = "title " + id
		w.SetHeader(h)
		w.Close()
	}
	if err := s.Delete("b"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("never-existed"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting an unknown session: %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(s.path("never-existed", ".lock")); !os.IsNotExist(err) {
		t.Errorf("deleting an unknown session left a lock file: %v", err)
	}
	want := titles(t, s)
	if diff := cmp.Diff(map[string]string{"a": "title a", "c": "title c"}, want); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	os.Remove(s.indexPath())
	if diff := cmp.Diff(want, titles(t, s)); diff != "" {
		t.Errorf("rebuilt list (-before +after):\n%s", diff)
	}
	if _, err := s.Header("b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Header of deleted = %v, want ErrNotFound", err)
	}
}

func TestStore_indexCompacts(t *testing.T) {
	s := newStore(t)
	w, _ := s.Create(header("a"))
	defer w.Close()
	for i := range 2 * compactSlack {
		h := header("a")
		h.Title = itoa(i)
		w.SetHeader(h)
	}
	if _, err := s.List(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(s.indexPath())
	if _, lines := parseIndex(data); lines != 1 {
		t.Errorf("index has %d lines after compaction, want 1", lines)
	}
	if got := titles(t, s)["a"]; got != itoa(2*compactSlack-1) {
		t.Errorf("title after compaction = %q", got)
	}
}

func titles(t *testing.T, s *Store) map[string]string {
	t.Helper()
	hs, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, h := range hs {
		m[h.ID] = h.Title
	}
	return m
}

func itoa(i int) string { return fmtInt(i) }

// A released transcript holds no lock, and its next write takes it back —
// unless another process holds it then, or wrote it meanwhile.
func TestWriter_releaseAndTakeBack(t *testing.T) {
	s := newStore(t)
	w, err := s.Create(header("s1"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	other, _ := Open(s.Dir())
	if err := w.Release(); err != nil {
		t.Fatal(err)
	}
	w2, _, err := other.OpenWriter("s1") // free while released; opened and closed, not written
	if err != nil {
		t.Fatalf("OpenWriter of a released transcript: %v", err)
	}
	w2.Close()
	if err := w.Append(text(1, "one")); err != nil {
		t.Fatalf("the first write after Release: %v", err)
	}
	if _, _, err := other.OpenWriter("s1"); !errors.As(err, new(*LockedError)) {
		t.Fatalf("OpenWriter once taken back = %v, want LockedError", err)
	}

	w.Release()
	w2, _, err = other.OpenWriter("s1")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(text(2, "two")); !errors.As(err, new(*LockedError)) {
		t.Errorf("a write while another holds it = %v, want LockedError", err)
	}
	w2.Append(text(2, "another's"))
	w2.Close()
	if err := w.Append(text(2, "two")); !errors.Is(err, ErrChanged) {
		t.Errorf("a write after another wrote it = %v, want ErrChanged", err)
	}
	tr, err := s.Read("s1")
	if err != nil || len(tr.Entries) != 2 {
		t.Fatalf("the transcript: %v, %v; want one and another's", tr, err)
	}
}
