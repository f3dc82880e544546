package persist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
)

// line is one line of a transcript file: either a header or an entry.
type line struct {
	Header  *Header          `json:"header,omitempty"`
	Seq     int64            `json:"seq,omitempty"`
	Tool    string           `json:"tool,omitempty"`
	Draft   int64            `json:"draft,omitempty"`
	Session string           `json:"session,omitempty"`
	Update  *json.RawMessage `json:"update,omitempty"`
}

// Transcript is a parsed transcript file.
type Transcript struct {
	Header  Header
	Entries []Entry
	// Skipped counts undecodable lines before the last one; they are
	// dropped, not fatal.
	Skipped int

	tornAt int64 // offset of a torn final line, or -1
}

// ErrNoHeader means the data holds no header line, so it is not a transcript.
var ErrNoHeader = errors.New("no header line")

// ParseTranscript decodes a transcript file. A last line that is unterminated
// or undecodable is a torn write and ignored; other bad lines are counted in
// Skipped.
func ParseTranscript(data []byte) (*Transcript, error) {
	t := &Transcript{tornAt: -1}
	seen := false
	for off := 0; off < len(data); {
		n := bytes.IndexByte(data[off:], '\n')
		if n < 0 {
			t.tornAt = int64(off)
			break
		}
		raw := data[off : off+n]
		last := off+n+1 == len(data)
		if err := t.add(raw, &seen); err != nil {
			if last {
				t.tornAt = int64(off)
			} else {
				t.Skipped++
			}
		}
		off += n + 1
	}
	if !seen {
		return nil, ErrNoHeader
	}
	return t, nil
}

func (t *Transcript) add(raw []byte, seen *bool) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var l line
	if err := json.Unmarshal(raw, &l); err != nil {
		return err
	}
	switch {
	case l.Header != nil:
		if l.Header.Version > FormatVersion {
			return fmt.Errorf("header version %d is newer than %d", l.Header.Version, FormatVersion)
		}
		t.Header, *seen = *l.Header, true
	case l.Update != nil:
		if u := *l.Update; len(u) == 0 || u[0] != '{' {
			return errors.New("update is not an object")
		}
		t.Entries = append(t.Entries, Entry{Seq: l.Seq, Tool: l.Tool, Draft: l.Draft, Session: l.Session, Update: *l.Update})
	default:
		return errors.New("line is neither header nor entry")
	}
	return nil
}

// Writer appends to one locked transcript. Its methods are safe for
// concurrent use. Release lets the transcript and its lock go while the
// session is idle; the next write takes them again.
type Writer struct {
	store *Store

	mu     sync.Mutex // protects the fields below
	lock   *fileLock  // nil once closed or released
	f      file       // nil once closed or released
	header Header
	// left is the transcript as Release left it, nil unless released: the
	// next write takes it back only if it is still that file, unchanged.
	left fs.FileInfo
}

// ErrChanged reports that a transcript let go while its session was idle
// was written meanwhile (by another acpbridge): this one's session no
// longer knows what it holds, and must be opened again.
var ErrChanged = errors.New("transcript changed while let go")

// Release syncs and closes the transcript and lets its lock go, until the
// next write (Append, SetHeader) takes them back. A session idle for long
// so holds no descriptor.
func (w *Writer) Release() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Sync()
	fi, serr := w.f.Stat()
	err = errors.Join(err, serr, w.f.Close())
	w.lock.release()
	w.f, w.lock, w.left = nil, nil, fi
	if err != nil {
		w.left = nil // taken back by nobody: its writes fail
		return fmt.Errorf("letting transcript %s go: %w", w.header.ID, err)
	}
	return nil
}

// reacquire takes back a transcript Release let go: its lock, then the
// file, if it is the one left and unchanged. w.mu is held.
func (w *Writer) reacquire() error {
	id := w.header.ID
	lk, err := w.store.lock(id)
	if err != nil {
		return fmt.Errorf("taking transcript %s back: %w", id, err)
	}
	f, err := os.OpenFile(w.store.path(id, ".jsonl"), os.O_WRONLY|os.O_APPEND, 0o600)
	var fi fs.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if err == nil && (!os.SameFile(fi, w.left) || fi.Size() != w.left.Size() || !fi.ModTime().Equal(w.left.ModTime())) {
		err = fmt.Errorf("%w: %s", ErrChanged, id)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		lk.release()
		return fmt.Errorf("taking transcript %s back: %w", id, err)
	}
	w.f, w.lock, w.left = f, lk, nil
	return nil
}

// file is what a Writer needs of its transcript file (an *os.File; tests
// put one in that fails).
type file interface {
	Write(b []byte) (int, error)
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
	Sync() error
	Close() error
}

// Header returns the last header written.
func (w *Writer) Header() Header {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.header
}

// Append writes entries, in one write unless one is large (then in a few,
// and a failed write is cut back, so the transcript keeps whole records
// only). They reach the OS at once (surviving a crash of this process) and
// the disk at the next Sync.
func (w *Writer) Append(entries ...Entry) error {
	var parts [][]byte
	var buf []byte
	for _, e := range entries {
		if e.Parts != nil {
			parts = append(parts, appendHead(buf, e))
			parts = append(parts, e.Parts...)
			buf = []byte("}\n")
			continue
		}
		if !json.Valid(e.Update) {
			return fmt.Errorf("encoding entry %d: its update is not JSON", e.Seq)
		}
		buf = appendHead(buf, e)
		if len(e.Update) < bigUpdate {
			buf = append(append(buf, e.Update...), '}', '\n')
			continue
		}
		parts = append(parts, buf, e.Update) // written as it is, not copied
		buf = []byte("}\n")
	}
	return w.write(append(parts, buf)...)
}

// bigUpdate is the size from which Append writes an update from where it
// is rather than copying it into the line (an image prompt).
const bigUpdate = 64 << 10

// appendHead writes the start of an entry's line as marshalLine would, up
// to its update, which the caller writes as it is (updates can be large,
// and each copy counts), then "}\n".
func appendHead(buf []byte, e Entry) []byte {
	buf = append(buf, '{')
	if e.Seq != 0 {
		buf = strconv.AppendInt(append(buf, `"seq":`...), e.Seq, 10)
		buf = append(buf, ',')
	}
	if e.Tool != "" {
		tool, _ := json.Marshal(e.Tool)
		buf = append(append(append(buf, `"tool":`...), tool...), ',')
	}
	if e.Draft != 0 {
		buf = strconv.AppendInt(append(buf, `"draft":`...), e.Draft, 10)
		buf = append(buf, ',')
	}
	if e.Session != "" {
		session, _ := json.Marshal(e.Session)
		buf = append(append(append(buf, `"session":`...), session...), ',')
	}
	return append(buf, `"update":`...)
}

// SetHeader records a new header snapshot in the transcript and the index.
func (w *Writer) SetHeader(h Header) error {
	h.Version = FormatVersion
	b, err := marshalLine(line{Header: &h})
	if err != nil {
		return fmt.Errorf("encoding header: %w", err)
	}
	if err := w.write(b); err != nil {
		return err
	}
	w.mu.Lock()
	w.header = h
	w.mu.Unlock()
	return w.store.appendIndex(indexRecord{Header: h})
}

// write appends whole lines, or nothing: a write that fails part way (a
// full disk) is cut back to the last whole record, so that the transcript
// stays readable and the next write, once there is room, follows it.
func (w *Writer) write(parts ...[]byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil && w.left != nil {
		if err := w.reacquire(); err != nil {
			return err
		}
	}
	if w.f == nil {
		return errors.New("transcript is closed")
	}
	fi, err := w.f.Stat()
	if err != nil {
		return fmt.Errorf("appending to transcript %s: %w", w.header.ID, err)
	}
	if err := writeAll(w.f, parts); err != nil {
		if terr := w.f.Truncate(fi.Size()); terr != nil {
			err = errors.Join(err, fmt.Errorf("cutting back the partial record: %w", terr))
		}
		return fmt.Errorf("appending to transcript %s: %w", w.header.ID, err)
	}
	return nil
}

func writeAll(f io.Writer, parts [][]byte) error {
	for _, p := range parts {
		if _, err := f.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// Sync flushes everything appended so far to disk.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("syncing transcript %s: %w", w.header.ID, err)
	}
	return nil
}

// Close syncs and closes the transcript and releases its lock (a
// transcript Release let go stays so).
func (w *Writer) Close() error {
	err := w.Sync()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.left = nil
	if w.f != nil {
		err = errors.Join(err, w.f.Close())
		w.f = nil
		w.lock.release()
		w.lock = nil
	}
	return err
}
