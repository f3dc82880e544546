package opencode

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"

	"golang.org/x/tools/txtar"
)

// fakeReplayEnv has the fake answer every prompt by playing the events of
// a recorded turn instead of its script: the opencode.jsonl section of
// this txtar file, the recorded session's id (the first an event names)
// replaced by the prompted one's where it is a sessionID, id or parentID, each permission.asked waiting for its
// reply (its recorded permission.replied follows it). The events of other
// sessions (a subagent's child session) are played as they were.
const fakeReplayEnv = "FAKE_OPENCODE_REPLAY"

// replay plays the recorded turn in the txtar file path; an abort stops
// it.
func (t *fakeTurn) replay(path string) {
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.fail("ReplayError", map[string]any{"message": err.Error()})
		return
	}
	var in []byte
	for _, f := range ar.Files {
		if f.Name == "opencode.jsonl" {
			in = f.Data
		}
	}
	own := ""
	for _, line := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		var ev struct {
			Type       string `json:"type"`
			Properties struct {
				SessionID string `json:"sessionID"`
				ID        string `json:"id"`
			} `json:"properties"`
		}
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		if own == "" && ev.Properties.SessionID != "" {
			own = ev.Properties.SessionID
		}
		for _, key := range []string{"sessionID", "id", "parentID"} { // not the text and metadata that name it: the goldens' output stays the same
			line = bytes.ReplaceAll(line, []byte(`"`+key+`":"`+own+`"`), []byte(`"`+key+`":"`+t.s.ID+`"`))
		}
		if ev.Type != "permission.asked" {
			t.f.emitRaw(t.dir, line)
			continue
		}
		ch := make(chan map[string]any, 1)
		t.f.mu.Lock()
		t.f.asks[ev.Properties.ID] = ch
		t.f.mu.Unlock()
		t.f.emitRaw(t.dir, line)
		select {
		case <-ch:
		case <-t.stop:
			return
		}
	}
}

// emitRaw sends an event as it is to every stream of the directory.
func (f *fakeServer) emitRaw(dir string, b []byte) {
	f.emitMu.Lock()
	defer f.emitMu.Unlock()
	f.record("event", map[string]any{"directory": dir, "event": json.RawMessage(b)})
	f.mu.Lock()
	streams := slices.Clone(f.streams[dir])
	f.mu.Unlock()
	for _, st := range streams {
		st.send(b)
	}
}

// replaying is the recorded turn every prompt plays, "" for none.
func replaying() string { return os.Getenv(fakeReplayEnv) }
