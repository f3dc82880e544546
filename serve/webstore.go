package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// chatRecord is what the map keeps for a chat id.
type chatRecord struct {
	Session string `json:"session"`
	Agent   string `json:"agent,omitempty"`
	Cwd     string `json:"cwd"`
	// LastUser is the id of the last user message a run prompted the
	// session with (AG-UI sends every message with every run).
	LastUser string `json:"lastUser,omitempty"`
}

// chatStore is the map from a web client's chat ids to bridge sessions,
// kept in a file (if it has a path) rewritten whole on every change.
type chatStore struct {
	path string

	mu    sync.Mutex // protects chats and the file
	chats map[string]chatRecord
}

// storeFile is the file's shape.
type storeFile struct {
	Chats map[string]chatRecord `json:"chats"`
}

// openChatStore reads the map at path ("" for none kept). A file that is
// not a map is moved aside (path.corrupt) and logged: its chats are then
// unknown, and start anew (told their history, if the client sends it).
func openChatStore(path string, log *slog.Logger) (*chatStore, error) {
	st := &chatStore{path: path, chats: map[string]chatRecord{}}
	if path == "" {
		return st, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the web chats map: %w", err)
	}
	var f storeFile
	if err := json.Unmarshal(b, &f); err != nil {
		log.Warn("web edge: the chats map is not JSON; moving it aside and starting anew", "path", path, "err", err)
		if err := os.Rename(path, path+".corrupt"); err != nil {
			return nil, fmt.Errorf("moving the corrupt web chats map aside: %w", err)
		}
		return st, nil
	}
	if f.Chats != nil {
		st.chats = f.Chats
	}
	return st, nil
}

func (st *chatStore) get(id string) (chatRecord, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.chats[id]
	return r, ok
}

// put records id's session and saves the map.
func (st *chatStore) put(id string, r chatRecord) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if old, ok := st.chats[id]; ok && old == r {
		return nil
	}
	st.chats[id] = r
	return st.save()
}

// drop forgets id and saves the map.
func (st *chatStore) drop(id string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.chats[id]; !ok {
		return nil
	}
	delete(st.chats, id)
	return st.save()
}

// save writes the map: a temporary file renamed over the old one. The
// caller holds st.mu.
func (st *chatStore) save() error {
	if st.path == "" {
		return nil
	}
	b, err := json.MarshalIndent(storeFile{Chats: st.chats}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(st.path), 0o700); err != nil {
		return fmt.Errorf("saving the web chats map: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(st.path), filepath.Base(st.path)+".tmp*")
	if err != nil {
		return fmt.Errorf("saving the web chats map: %w", err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o600)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), st.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("saving the web chats map: %w", err)
	}
	return nil
}
