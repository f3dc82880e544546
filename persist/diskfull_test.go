package persist

import (
	"os"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fullFile is a transcript file on a disk that takes room bytes more,
// then fails with ENOSPC, possibly part way through a write.
type fullFile struct {
	*os.File
	room int // -1: no limit
}

func (f *fullFile) Write(b []byte) (int, error) {
	if f.room < 0 || len(b) <= f.room {
		if f.room >= 0 {
			f.room -= len(b)
		}
		return f.File.Write(b)
	}
	n, _ := f.File.Write(b[:f.room])
	f.room = 0
	return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

// A write that fails at any byte of a record leaves the transcript as it
// was: every acknowledged entry reads back, and writing goes on once there
// is room again.
func TestWriter_fullDiskAtEveryOffset(t *testing.T) {
	first := []Entry{text(1, "one"), text(2, "two")}
	failing := text(3, "three, which the full disk cuts short")
	after := text(4, "four, once there is room")
	record, err := marshalLine(line{Seq: failing.Seq, Update: &failing.Update})
	if err != nil {
		t.Fatal(err)
	}
	for room := 0; room < len(record); room++ {
		s := newStore(t)
		w, err := s.Create(header("s"))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(first...); err != nil {
			t.Fatal(err)
		}
		f := &fullFile{File: w.f.(*os.File), room: room}
		w.f = f
		if err := w.Append(failing); err == nil {
			t.Fatalf("room %d: the append did not fail", room)
		}
		f.room = -1
		if err := w.Append(after); err != nil {
			t.Fatalf("room %d: append after the disk had room again: %v", room, err)
		}
		w.Close()
		tr, err := s.Read("s")
		if err != nil {
			t.Fatalf("room %d: %v", room, err)
		}
		if diff := cmp.Diff(append(first, after), tr.Entries); diff != "" {
			t.Fatalf("room %d: entries (-want +got):\n%s", room, diff)
		}
		if tr.tornAt >= 0 {
			t.Fatalf("room %d: a torn record at %d", room, tr.tornAt)
		}
	}
}
