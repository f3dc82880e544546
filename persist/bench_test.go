package persist

import (
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
)

// BenchmarkAppend measures appending one typical agent message to a
// transcript (no fsync: the bridge syncs once per turn).
func BenchmarkAppend(b *testing.B) {
	s, _ := Open(b.TempDir())
	now := time.Now()
	w, err := s.Create(Header{ID: "bench", Agent: "mock", Cwd: "/", CreatedAt: now, UpdatedAt: now})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	e := entry(1, acp.UpdateAgentMessageText("Here is a typical answer of a few sentences, about two hundred bytes long, which is what a short agent message in an editor looks like on average."))
	line, _ := marshalLine(e)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if err := w.Append(e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTurnSync measures what ends a turn: a header snapshot (with its
// index append) and an fsync.
func BenchmarkTurnSync(b *testing.B) {
	s, _ := Open(b.TempDir())
	now := time.Now()
	h := Header{ID: "bench", Agent: "mock", Cwd: "/", CreatedAt: now, UpdatedAt: now}
	w, err := s.Create(h)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for b.Loop() {
		if err := w.SetHeader(h); err != nil {
			b.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
