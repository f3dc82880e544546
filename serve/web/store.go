package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/privfile"
)

// MaxChatID bounds a web client's chat and thread ids (and AG-UI's run
// ids), as Limits.MaxIDLength bounds session and request ids.
const MaxChatID = core.DefaultMaxIDLength

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
// kept (if it has a directory) one file per chat, so that a chat's change
// writes that chat's file only.
type chatStore struct {
	dir string

	mu    sync.Mutex // protects chats and the files
	chats map[string]chatRecord
}

// chatFile is one chat's file: its id and its record.
type chatFile struct {
	ID string `json:"id"`
	chatRecord
}

// legacyFile is the map as one file, as it was kept before: read once,
// its chats moved to files of their own.
type legacyFile struct {
	Chats map[string]chatRecord `json:"chats"`
}

// openChatStore reads the map kept in dir ("" for none kept), one file
// per chat; legacy is the file the whole map was kept in before, whose
// chats are moved into dir. A file that is not a chat is moved aside
// (name.corrupt) and logged: its chat is then unknown, and starts anew
// (told its history, if the client sends it).
func openChatStore(dir, legacy string, log *slog.Logger) (*chatStore, error) {
	st := &chatStore{dir: dir, chats: map[string]chatRecord{}}
	if dir == "" {
		return st, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading the web chats: %w", err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		var f chatFile
		path := filepath.Join(dir, e.Name())
		if err := readJSON(path, &f); err != nil || f.ID == "" || ChatFileName(f.ID) != e.Name() {
			log.Warn("web edge: a chat's file is not one; moving it aside", "path", path, "err", err)
			os.Rename(path, path+".corrupt")
			continue
		}
		st.chats[f.ID] = f.chatRecord
	}
	return st, st.migrate(legacy, log)
}

// migrate moves the chats of the map kept whole at path into files of
// their own, then removes it; one that is not a map is moved aside.
func (st *chatStore) migrate(path string, log *slog.Logger) error {
	var f legacyFile
	err := readJSON(path, &f)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		log.Warn("web edge: the chats map is not JSON; moving it aside and starting anew", "path", path, "err", err)
		if err := os.Rename(path, path+".corrupt"); err != nil {
			return fmt.Errorf("moving the corrupt web chats map aside: %w", err)
		}
		return nil
	}
	for id, r := range f.Chats {
		if _, ok := st.chats[id]; ok || len(id) > MaxChatID {
			continue
		}
		if err := st.put(id, r); err != nil {
			return err
		}
	}
	return os.Remove(path)
}

// readJSON decodes the file at path into v.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func (st *chatStore) get(id string) (chatRecord, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.chats[id]
	return r, ok
}

// put records id's session and saves its file.
func (st *chatStore) put(id string, r chatRecord) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if old, ok := st.chats[id]; ok && old == r {
		return nil
	}
	st.chats[id] = r
	return st.save(id, r)
}

// drop forgets id and removes its file.
func (st *chatStore) drop(id string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.chats[id]; !ok {
		return nil
	}
	delete(st.chats, id)
	if st.dir == "" {
		return nil
	}
	if err := os.Remove(filepath.Join(st.dir, ChatFileName(id))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("forgetting web chat %s: %w", id, err)
	}
	return nil
}

// save writes id's file whole (privfile.Write). The caller holds st.mu.
func (st *chatStore) save(id string, r chatRecord) error {
	if st.dir == "" {
		return nil
	}
	b, err := json.Marshal(chatFile{ID: id, chatRecord: r})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		return fmt.Errorf("saving web chat %s: %w", id, err)
	}
	if err := privfile.Write(filepath.Join(st.dir, ChatFileName(id)), append(b, '\n')); err != nil {
		return fmt.Errorf("saving web chat %s: %w", id, err)
	}
	return nil
}

// ChatFileName is the name of id's file: a hash of it, which any id
// makes a file name of.
func ChatFileName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:16]) + ".json"
}
