// Package syncbuf is a bytes.Buffer that a test may read while another
// goroutine writes it (a child process's stderr, or a log), and a writer
// that lets several goroutines write whole lines to one stream.
package syncbuf

import (
	"bytes"
	"io"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent Write and String.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Writer serialises writes to W: each Write reaches it whole.
type Writer struct {
	mu sync.Mutex
	W  io.Writer
}

// Write writes p to W, alone.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.W.Write(p)
}
