package bridge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// ConfigEdits is the bridge's own option that routes an agent's file
// writes through the client's buffers (fs/write_text_file), offered to a
// client that can write files. Its values are EditsAgent (the default: the
// agent writes files itself) and EditsEditor.
const (
	ConfigEdits = "edits"
	EditsAgent  = "agent"
	EditsEditor = "editor"
)

// Routing an edit works for every agent, because it needs nothing from
// the agent but the tool calls it reports: when an edit tool call is
// announced, the router keeps the content of the files it names; when the
// call completes, each file the agent changed is put back as it was (a
// file it made, emptied) and the new content is written through the
// client, so that the editor holds
// the change in its buffer (and shows it for review) and writes it to
// disk itself. If the client's write fails, the agent's content is written
// back, so nothing is lost.
//
// A file whose earlier content the router could not keep (the agent wrote
// it before the tool call was announced, as Codex and Amp may) is rebuilt
// from the call's diff where the diff says exactly what changed; else the
// agent's write stands. Deleted files, binary files and files over
// maxRouted are left as the agent wrote them.

// maxRouted is the largest file the router keeps and routes.
const maxRouted = 8 << 20

// clientWriteTimeout bounds the client's answer to one fs/write_text_file.
const clientWriteTimeout = 30 * time.Second

// router routes one session's edits. Its methods are safe for concurrent
// use.
type router struct {
	s *Session

	mu    sync.Mutex
	calls map[acp.ToolCallId]*editCall
	// wrote is what the agent itself wrote through the client (an ACP agent
	// calling fs/write_text_file), by path: such a write needs no routing.
	wrote map[string]string
}

// editCall is a tool call the router watches.
type editCall struct {
	edit   bool                 // its kind is edit
	before map[string]*snapshot // what each file it names held when it was announced
	diffs  map[string]acp.Diff  // its latest diff per file
}

// snapshot is a file's content at one time; exists is false for a file
// that was not there.
type snapshot struct {
	content string
	exists  bool
}

func newRouter(s *Session) *router {
	return &router{s: s, calls: map[acp.ToolCallId]*editCall{}, wrote: map[string]string{}}
}

// observe watches an update on its way to the client, routing a completed
// edit's files before its completion is delivered.
func (r *router) observe(u acp.SessionUpdate) {
	switch {
	case u.ToolCall != nil:
		t := u.ToolCall
		r.track(t.ToolCallId, &t.Kind, t.Locations, t.Content)
		r.settle(t.ToolCallId, t.Status)
	case u.ToolCallUpdate != nil:
		t := u.ToolCallUpdate
		r.track(t.ToolCallId, t.Kind, t.Locations, t.Content)
		if t.Status != nil {
			r.settle(t.ToolCallId, *t.Status)
		}
	}
}

// track notes what an announcement or update says of a tool call, and
// keeps the content of the files an edit names that it has not kept yet.
func (r *router) track(id acp.ToolCallId, kind *acp.ToolKind, locs []acp.ToolCallLocation, content []acp.ToolCallContent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls[id]
	if c == nil {
		c = &editCall{before: map[string]*snapshot{}, diffs: map[string]acp.Diff{}}
		r.calls[id] = c
	}
	if kind != nil && *kind != "" {
		c.edit = *kind == acp.ToolKindEdit
	}
	for _, b := range content {
		if b.Diff != nil && filepath.IsAbs(b.Diff.Path) {
			p := filepath.Clean(b.Diff.Path)
			c.diffs[p] = acp.Diff{Path: p, OldText: b.Diff.OldText, NewText: b.Diff.NewText}
		}
	}
	if !c.edit {
		delete(r.calls, id) // a later update that makes it an edit starts again
		return
	}
	for _, p := range c.paths(locs) {
		if _, kept := c.before[p]; !kept {
			c.before[p] = read(p)
		}
	}
}

// paths is every absolute path the call names: its diffs' and locs.
func (c *editCall) paths(locs []acp.ToolCallLocation) []string {
	var ps []string
	for p := range c.diffs {
		ps = append(ps, p)
	}
	for _, l := range locs {
		if filepath.IsAbs(l.Path) {
			ps = append(ps, filepath.Clean(l.Path))
		}
	}
	return ps
}

// settle routes a completed edit's files and forgets a call that ended.
func (r *router) settle(id acp.ToolCallId, status acp.ToolCallStatus) {
	if status != acp.ToolCallStatusCompleted && status != acp.ToolCallStatusFailed {
		return
	}
	r.mu.Lock()
	c := r.calls[id]
	delete(r.calls, id)
	r.mu.Unlock()
	if c == nil || !c.edit || status != acp.ToolCallStatusCompleted {
		return
	}
	for p, before := range c.before {
		r.route(p, before, c.diffs[p])
	}
}

// route puts path back as it was before the agent's edit and writes the
// agent's content through the client.
func (r *router) route(path string, before *snapshot, d acp.Diff) {
	after := read(path)
	if after == nil || !after.exists {
		return // unreadable, too large, binary, or deleted: the agent's write stands
	}
	r.mu.Lock()
	own, byClient := r.wrote[path]
	delete(r.wrote, path)
	r.mu.Unlock()
	if byClient && own == after.content {
		return // the agent wrote it through the client already
	}
	old := earlier(before, after, d)
	if old == nil {
		return // nothing to tell the change from
	}
	log := r.s.m.log.With("session", r.s.id, "path", path)
	if err := put(path, old); err != nil {
		log.Warn("putting a file back before the editor writes it; the agent's write stands", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(r.s.life, clientWriteTimeout)
	defer cancel()
	_, err := editor{r.s}.write(ctx, acp.WriteTextFileRequest{Path: path, Content: after.content})
	if err == nil {
		return
	}
	log.Warn("the editor did not write the agent's edit; writing it to disk", "err", err)
	if err := put(path, after); err != nil {
		log.Error("writing the agent's edit back to disk", "err", err)
	}
}

// earlier is what path held before the edit: the content kept when the
// edit was announced, if the edit changed it and it is what the edit's
// diff says it replaced; else, where it can tell, what the diff says. The
// kept content can be too late (the agent wrote before its call came) or
// caught mid-write (codex empties a file, then writes it; or writes a new
// file over the old).
func earlier(before, after *snapshot, d acp.Diff) *snapshot {
	if before == nil {
		return nil // the file could not be read then
	}
	changed := before.exists != after.exists || before.content != after.content
	if changed && replaced(before, d) {
		return before
	}
	switch {
	case d.Path == "":
	case d.OldText == nil:
		return &snapshot{} // a new file the agent wrote before it was announced
	case *d.OldText != d.NewText && strings.Count(after.content, d.NewText) == 1:
		return &snapshot{content: strings.Replace(after.content, d.NewText, *d.OldText, 1), exists: true}
	}
	if changed {
		return before // the diff can't say: what was kept is the best there is
	}
	return nil
}

// replaced reports whether before is what diff d says its edit replaced,
// as far as d tells: a diff of a new file, or without old text, can't say.
func replaced(before *snapshot, d acp.Diff) bool {
	if d.Path == "" || d.OldText == nil {
		return true
	}
	return before.exists && strings.Contains(before.content, *d.OldText)
}

// read keeps a text file's content; nil for a file the router leaves
// alone (unreadable, a directory, binary or over maxRouted).
func read(path string) *snapshot {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &snapshot{}
	}
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxRouted {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil || !utf8.Valid(b) {
		return nil
	}
	return &snapshot{content: string(b), exists: true}
}

// put makes path hold s's content, keeping its permissions. A file that
// was not there is emptied, not removed: Claude forgets what it wrote to a
// file that disappears, and refuses to edit it again before reading it.
func put(path string, s *snapshot) error {
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	return os.WriteFile(path, []byte(s.content), mode)
}

// wroteThrough notes a write the agent made through the client itself.
func (r *router) wroteThrough(path, content string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wrote[filepath.Clean(path)] = content
}

// editsOption is the edits option, for a client that can write files.
func editsOption(current string) agent.ConfigOption {
	return agent.ConfigOption{ID: ConfigEdits, Name: "Edits", Current: current,
		Description: "Where the agent's file writes go: to disk by the agent, or through the editor's buffers, which show them for review",
		Choices: []agent.ConfigValue{
			{Value: EditsAgent, Name: "Agent writes files", Description: "The agent writes files itself"},
			{Value: EditsEditor, Name: "Through the editor", Description: "Each file the agent edits is written by the editor (fs/write_text_file), which holds the change in its buffer"},
		}}
}

// setEditsOption sets the edits option, which only a client that can
// write files is offered.
func (s *Session) setEditsOption(value string) error {
	if !writeFS(s.caps()) {
		return fmt.Errorf("%w: unknown config option %q: the client did not offer fs/write_text_file at initialize", agent.ErrInvalidParams, ConfigEdits)
	}
	if value != EditsAgent && value != EditsEditor {
		return fmt.Errorf("%w: %s can't be %q; choose one of %s, %s", agent.ErrInvalidParams, ConfigEdits, value, EditsAgent, EditsEditor)
	}
	s.setEdits(value)
	s.saveHeader()
	return nil
}

// setEdits takes the edits option's value (recorded, or "" for none):
// the session routes edits while it is EditsEditor and the client can
// write files (the client said so at initialize, before any session).
func (s *Session) setEdits(value string) {
	s.mu.Lock()
	s.edits = value
	s.mu.Unlock()
	if value == EditsEditor && writeFS(s.caps()) {
		s.router.CompareAndSwap(nil, newRouter(s))
	} else {
		s.router.Store(nil)
	}
}

// withEdits adds the edits option's value to cfg, the config recorded in
// the header; s.mu must be held.
func (s *Session) withEdits(cfg map[string]string) map[string]string {
	if s.edits != "" {
		cfg[ConfigEdits] = s.edits
	}
	return cfg
}
