// Package persist keeps acpbridge's own transcript of every session on disk.
//
// The layout under the state directory is:
//
//	index.jsonl            one header snapshot per line; the last line for an id wins
//	index.lock             serialises index appends and compaction between processes
//	sessions/<id>.jsonl    the transcript: header lines and entry lines, append-only
//	sessions/<id>.lock     held (flock) by the one process that has the session open
//
// A transcript is the source of truth; the index is a cache that session/list
// reads in one go and that is rebuilt from the transcripts when it is missing.
// Readers ignore a torn last line, so a crash mid-append loses at most that
// line, and a writer that reopens a transcript cuts such a tail off first.
package persist

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"time"
)

// FormatVersion is written into every header; readers accept it and older.
const FormatVersion = 1

// Sentinel errors callers branch on.
var (
	ErrNotFound  = errors.New("session not found")
	ErrInvalidID = errors.New("invalid session id")
	ErrExists    = errors.New("session already exists")
)

// LockedError reports that another process holds a session open.
type LockedError struct {
	ID  string
	PID string // the holder's pid as it wrote it, or "" if unknown
}

func (e *LockedError) Error() string {
	if e.PID == "" {
		return fmt.Sprintf("session %s is open in another acpbridge process", e.ID)
	}
	return fmt.Sprintf("session %s is open in another acpbridge process (pid %s)", e.ID, e.PID)
}

// Header describes a session. Later header lines in a transcript replace
// earlier ones as a whole.
type Header struct {
	Version  int    `json:"v"`
	ID       string `json:"id"`
	Agent    string `json:"agent"`
	NativeID string `json:"nativeId,omitempty"`
	Cwd      string `json:"cwd"`
	// Directories are the session's workspace roots beside Cwd, as the
	// client last opened it with (ACP's additionalDirectories).
	Directories []string `json:"additionalDirectories,omitempty"`
	// SystemPrompt is the client's instructions for the session, kept
	// for a load or resume that does not send them again, a fork and a
	// handoff.
	SystemPrompt *SystemPrompt `json:"systemPrompt,omitempty"`
	Title        string        `json:"title,omitempty"`
	// Config holds the session's config option values by option id
	// ("mode", "model", "effort", ...), to reopen its agent with them.
	Config map[string]string `json:"config,omitempty"`
	// Mode and Model are what headers held before Config; they are read,
	// not written (see ConfigValues).
	Mode      string    `json:"mode,omitempty"`
	Model     string    `json:"model,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// NativeHistory is set when the transcript keeps no entries because the
	// agent's own resume returns the history (--persist auto).
	NativeHistory bool `json:"nativeHistory,omitempty"`
	// Handoffs records, for each agent the session left for another, its
	// native session and the transcript's last entry when it left, so that
	// handing the session back continues that native session and tells it
	// only what happened since.
	Handoffs map[string]Handoff `json:"handoffs,omitempty"`
	// ForkOf is the session this one was forked from: its transcript
	// starts with a copy of that one's.
	ForkOf string `json:"forkOf,omitempty"`
	// ForkFrom is the parent's native session that the fork's agent forks,
	// kept until the fork's agent names a session of its own (Claude does
	// at its first turn): a fork reopened before then forks it again.
	ForkFrom string `json:"forkFrom,omitempty"`
	// Retell is set while the fork's first prompt is still to tell its
	// agent the conversation copied from the parent (an agent that can't
	// fork its own), so that a fork reopened before then still tells it.
	Retell bool `json:"retell,omitempty"`
}

// SystemPrompt is a session's system-level instructions: Mode is ACP's
// ("append" or "override").
type SystemPrompt struct {
	Mode string `json:"mode"`
	Text string `json:"text"`
}

// Handoff is where an agent left a session.
type Handoff struct {
	NativeID string `json:"nativeId,omitempty"`
	Seq      int64  `json:"seq"`
}

// Equal reports whether two headers say the same.
func (h Header) Equal(o Header) bool { return reflect.DeepEqual(h, o) }

// ConfigValues returns the header's config option values, taking those of
// a header written before Config existed from its Mode and Model.
func (h Header) ConfigValues() map[string]string {
	if h.Config != nil || (h.Mode == "" && h.Model == "") {
		return h.Config
	}
	c := map[string]string{}
	if h.Mode != "" {
		c["mode"] = h.Mode
	}
	if h.Model != "" {
		c["model"] = h.Model
	}
	return c
}

// Entry is one completed piece of the conversation in its final state: a
// content block of a user, agent or thought message, a tool call, or a plan,
// as an encoded ACP session update. The store never decodes the update, so
// that session/load can replay it as it was written.
type Entry struct {
	// Seq orders entries by when they started; several entries may share
	// a Seq (the blocks of one message).
	Seq int64 `json:"seq"`
	// Tool is the tool call id of a tool call entry, so that a replay can
	// keep only the last state of a tool call recorded twice.
	Tool string `json:"tool,omitempty"`
	// Draft numbers a checkpoint of a turn still running: what it had
	// streamed so far, recorded so that a bridge killed mid-turn keeps it.
	// A later draft of the same Seq, or a final entry (Draft 0), replaces
	// it on replay.
	Draft int64 `json:"draft,omitempty"`
	// Session, when set, is the native id of the child session (a
	// subagent) the entry belongs to: the agent's own id for it, unique
	// within the session. A child's entries are kept with its parent's, in
	// the parent's transcript, and the parent's replay sends them.
	Session string          `json:"session,omitempty"`
	Update  json.RawMessage `json:"update"`
	// Parts, when set instead of Update, is the update in pieces, which
	// Writer.Append writes one after the other: a large update written
	// from where it is (an image prompt's data, which shares the prompt's
	// memory) rather than copied into one buffer. Entries read back have
	// Update.
	Parts [][]byte `json:"-"`
}

// Store is a directory of transcripts. It is safe for concurrent use.
type Store struct {
	dir string
}

// ValidID reports whether id can name a session on disk: letters, digits,
// '-' and '_', at most 128 bytes, starting with a letter or digit. Nothing
// else reaches the file system. (A loop, not a regexp: compiling
// ^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$ unrolls the 127 repeats, a
// millisecond of every bridge's start-up.)
func ValidID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := range len(id) {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}

// Open opens (creating if needed) the store rooted at dir.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o700); err != nil {
		return nil, fmt.Errorf("creating state directory: %w", err)
	}
	return &Store{dir: dir}, nil
}

// Dir returns the store's root directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) path(id, ext string) string {
	return filepath.Join(s.dir, "sessions", id+ext)
}

func checkID(id string) error {
	if !ValidID(id) {
		return fmt.Errorf("%w: %q", ErrInvalidID, id)
	}
	return nil
}

// Create starts a new transcript for h and returns it open and locked.
func (s *Store) Create(h Header) (*Writer, error) {
	if err := checkID(h.ID); err != nil {
		return nil, err
	}
	lk, err := s.lock(h.ID)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.path(h.ID, ".jsonl"), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if errors.Is(err, fs.ErrExist) {
		err = fmt.Errorf("%w: %s", ErrExists, h.ID)
	}
	if err != nil {
		lk.release()
		return nil, err
	}
	w := &Writer{store: s, f: f, lock: lk, header: h}
	err = w.SetHeader(h)
	if err == nil {
		err = w.Sync()
	}
	if err != nil { // leave nothing behind: no empty transcript, no lock
		w.Close()
		os.Remove(s.path(h.ID, ".jsonl"))
		os.Remove(s.path(h.ID, ".lock"))
		return nil, err
	}
	return w, syncDir(filepath.Join(s.dir, "sessions"))
}

// OpenWriter locks an existing transcript for appending. A torn last line
// left by a crash is cut off first.
func (s *Store) OpenWriter(id string) (*Writer, *Transcript, error) {
	if err := checkID(id); err != nil {
		return nil, nil, err
	}
	lk, err := s.lock(id)
	if err != nil {
		return nil, nil, err
	}
	t, err := s.Read(id)
	if err != nil {
		if errors.Is(err, ErrNotFound) { // no session: no lock file either
			os.Remove(s.path(id, ".lock"))
		}
		lk.release()
		return nil, nil, err
	}
	f, err := os.OpenFile(s.path(id, ".jsonl"), os.O_WRONLY|os.O_APPEND, 0o600)
	if err == nil && t.tornAt >= 0 {
		err = f.Truncate(t.tornAt)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		lk.release()
		return nil, nil, fmt.Errorf("opening transcript %s: %w", id, err)
	}
	return &Writer{store: s, f: f, lock: lk, header: t.Header}, t, nil
}

// Read reads a whole transcript without locking it.
func (s *Store) Read(id string) (*Transcript, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(s.path(id, ".jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading transcript %s: %w", id, err)
	}
	t, err := ParseTranscript(data)
	if err != nil {
		return nil, fmt.Errorf("transcript %s: %w", id, err)
	}
	return t, nil
}

// Header returns the current header of a session, from the index.
func (s *Store) Header(id string) (Header, error) {
	if err := checkID(id); err != nil {
		return Header{}, err
	}
	hs, err := s.List()
	if err != nil {
		return Header{}, err
	}
	for _, h := range hs {
		if h.ID == id {
			return h, nil
		}
	}
	return Header{}, fmt.Errorf("%w: %s", ErrNotFound, id)
}

// Delete removes a session's transcript. Deleting an unknown session is not
// an error; deleting one open in another process is.
func (s *Store) Delete(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	lk, err := s.lock(id)
	if err != nil {
		return err
	}
	defer lk.release()
	err = os.Remove(s.path(id, ".jsonl"))
	os.Remove(s.path(id, ".lock"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	case err != nil:
		return fmt.Errorf("deleting transcript %s: %w", id, err)
	}
	return s.appendIndex(indexRecord{Header: Header{ID: id}, Deleted: true})
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// marshalLine encodes v as one JSON line.
func marshalLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
