package persist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// indexRecord is one line of index.jsonl.
type indexRecord struct {
	Header
	Deleted bool `json:"deleted,omitempty"`
}

// compactSlack is how many superseded index lines are tolerated beyond the
// number of live sessions before List rewrites the index.
const compactSlack = 256

func (s *Store) indexPath() string { return filepath.Join(s.dir, "index.jsonl") }
func (s *Store) indexLock() string { return filepath.Join(s.dir, "index.lock") }

// appendIndex adds one record under the index lock, so that it never lands
// in a file that a concurrent compaction is replacing.
func (s *Store) appendIndex(r indexRecord) error {
	b, err := marshalLine(r)
	if err != nil {
		return fmt.Errorf("encoding index record: %w", err)
	}
	return withLock(s.indexLock(), func() error {
		f, err := os.OpenFile(s.indexPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("opening index: %w", err)
		}
		_, werr := f.Write(b)
		return errors.Join(werr, f.Close())
	})
}

// List returns the header of every stored session, in no particular order.
// It reads the index only; if the index is missing it is rebuilt from the
// transcripts, and if it has grown far past the live set it is compacted.
func (s *Store) List() ([]Header, error) {
	data, err := os.ReadFile(s.indexPath())
	if errors.Is(err, fs.ErrNotExist) {
		return s.rebuildIndex()
	}
	if err != nil {
		return nil, fmt.Errorf("reading index: %w", err)
	}
	live, lines := parseIndex(data)
	hs := make([]Header, 0, len(live))
	for _, h := range live {
		hs = append(hs, h)
	}
	if lines > 2*len(live)+compactSlack {
		if err := s.writeIndex(); err != nil {
			return hs, fmt.Errorf("compacting index: %w", err)
		}
	}
	return hs, nil
}

// parseIndex folds index lines into the live set; torn or bad lines are
// skipped.
func parseIndex(data []byte) (map[string]Header, int) {
	live := make(map[string]Header)
	lines := 0
	for len(data) > 0 {
		n := bytes.IndexByte(data, '\n')
		if n < 0 {
			break // torn last line
		}
		var r indexRecord
		if json.Unmarshal(data[:n], &r) == nil && ValidID(r.ID) {
			lines++
			if r.Deleted {
				delete(live, r.ID)
			} else {
				live[r.ID] = r.Header
			}
		}
		data = data[n+1:]
	}
	return live, lines
}

// writeIndex rewrites the index from its own live set (or, if it is
// missing, from the transcripts) and atomically replaces it.
func (s *Store) writeIndex() error {
	return withLock(s.indexLock(), func() error {
		var live map[string]Header
		data, err := os.ReadFile(s.indexPath())
		switch {
		case err == nil:
			live, _ = parseIndex(data)
		case errors.Is(err, fs.ErrNotExist):
			live = s.scanTranscripts()
		default:
			return err
		}
		var buf bytes.Buffer
		for _, h := range live {
			b, err := marshalLine(indexRecord{Header: h})
			if err != nil {
				return err
			}
			buf.Write(b)
		}
		return writeFileAtomic(s.indexPath(), buf.Bytes())
	})
}

func (s *Store) rebuildIndex() ([]Header, error) {
	if err := s.writeIndex(); err != nil {
		return nil, fmt.Errorf("rebuilding index: %w", err)
	}
	data, err := os.ReadFile(s.indexPath())
	if err != nil {
		return nil, fmt.Errorf("reading index: %w", err)
	}
	live, _ := parseIndex(data)
	hs := make([]Header, 0, len(live))
	for _, h := range live {
		hs = append(hs, h)
	}
	return hs, nil
}

// scanTranscripts reads the header of every transcript on disk.
func (s *Store) scanTranscripts() map[string]Header {
	live := make(map[string]Header)
	ents, _ := os.ReadDir(filepath.Join(s.dir, "sessions"))
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || !ValidID(id) {
			continue
		}
		if t, err := s.Read(id); err == nil {
			live[id] = t.Header
		}
	}
	return live
}

// writeFileAtomic writes data to a temporary file, syncs it and renames it
// over path.
func writeFileAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}
