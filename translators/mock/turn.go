package mock

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// errFail is the error a prompt with "fail" asks for.
var errFail = errors.New("simulated agent failure (the prompt said \"fail\")")

// errAskCancelled ends a turn whose permission ask the client answered
// "cancelled": in ACP that outcome means the turn is being cancelled.
var errAskCancelled = errors.New("permission ask cancelled")

// turn is one mock turn being played.
type turn struct {
	s      *session
	ev     agent.Events // the session's, or its subagent's (delegate)
	ctx    context.Context
	words  map[string]bool
	delay  time.Duration // between streamed chunks
	tokens int

	editRejected bool // the user said no: the plan's edit step is not done
}

func (t *turn) has(word string) bool {
	return t.words[word] || (t.words["demo"] && !notInDemo[word])
}

// notInDemo are the words "demo" does not take in.
var notInDemo = map[string]bool{"slow": true, "fail": true, "setup": true, "notice": true, "compact": true, "delegate": true, "background": true}

// Its compaction's summary, streamed in chunks.
const compactSummary = "The user asked for a demonstration; the mock showed it."

// compact compacts the context as agents do: in progress, its summary in
// chunks, completed. A client that takes no compaction updates is told
// in the agent's text, as Claude Code's compaction is.
func (t *turn) compact() error {
	id := t.s.nextCompactionID()
	t.ev.Update(agentkit.Compaction(id, acp.CompactionStatusInProgress, "", ""))
	for _, w := range strings.SplitAfter(compactSummary, " ") {
		if err := t.pause(); err != nil {
			return err
		}
		t.ev.Update(agentkit.SummaryChunk(id, w))
	}
	t.ev.Update(agentkit.Compaction(id, acp.CompactionStatusCompleted, "", "",
		acp.UpdateAgentMessageText("*Context compacted: "+compactSummary+"*\n\n")))
	return t.pause()
}

// notice warns, as an agent does of a retried model request.
func (t *turn) notice() error {
	t.ev.Update(agentkit.Notice(acp.NoticeSeverityWarning, "Mock model request retried (1/3)", "the mock's make-believe provider said 529; next try at once"))
	return t.pause()
}

// play runs the steps in order; each returns early once ctx is cancelled.
func (t *turn) play(prompt []acp.ContentBlock) error {
	steps := []struct {
		word string
		run  func() error
	}{
		{"setup", t.setup},
		{"notice", t.notice},
		{"compact", t.compact},
		{"think", t.think},
		{"plan", func() error { return t.plan(0) }},
		{"read", t.read},
		{"edit", t.edit},
		{"delegate", t.delegate},
		{"plan", func() error { return t.plan(2) }},
	}
	for _, st := range steps {
		if t.has(st.word) {
			if err := st.run(); err != nil {
				return err
			}
		}
	}
	if err := t.answer(prompt); err != nil {
		return err
	}
	if t.has("plan") {
		return t.plan(3)
	}
	if t.words["fail"] {
		return errFail
	}
	return nil
}

// pause waits between chunks, or returns ctx's error.
func (t *turn) pause() error {
	if t.delay == 0 {
		return t.ctx.Err()
	}
	select {
	case <-time.After(t.delay):
		return nil
	case <-t.ctx.Done():
		return t.ctx.Err()
	}
}

// stream sends text word by word through send.
func (t *turn) stream(text string, send func(string) acp.SessionUpdate) error {
	for _, w := range strings.SplitAfter(text, " ") {
		if err := t.pause(); err != nil {
			return err
		}
		t.tokens++
		t.ev.Update(send(w))
	}
	return nil
}

func (t *turn) think() error {
	return t.stream("The user wants a demonstration. I will answer in small chunks.", acp.UpdateAgentThoughtText)
}

// setup says where the session works and what it was told.
func (t *turn) setup() error {
	text := "Working in " + t.s.cwd
	if len(t.s.dirs) > 0 {
		text += ", and in " + strings.Join(t.s.dirs, ", ")
	}
	text += ". "
	switch p := t.s.prompt; {
	case p == nil:
		text += "No system prompt. "
	case p.Override:
		text += "System prompt (override): " + p.Text + " "
	default:
		text += "System prompt (append): " + p.Text + " "
	}
	return t.stream(text, acp.UpdateAgentMessageText)
}

func (t *turn) answer(prompt []acp.ContentBlock) error {
	model := t.s.cfg.Get(agent.ConfigModel)
	text := "You said: " + promptText(prompt)
	if model == "mock-large" {
		text = "(mock-large) " + text
	}
	if extra := attachments(prompt); extra != "" {
		text += " " + extra
	}
	return t.stream(text, acp.UpdateAgentMessageText)
}

func promptText(prompt []acp.ContentBlock) string {
	var parts []string
	for _, b := range prompt {
		if b.Text != nil {
			parts = append(parts, strings.TrimSpace(b.Text.Text))
		}
	}
	return strings.Join(parts, " ")
}

// attachments describes the non-text blocks of a prompt.
func attachments(prompt []acp.ContentBlock) string {
	var got []string
	for _, b := range prompt {
		switch {
		case b.Image != nil:
			got = append(got, "an image ("+b.Image.MimeType+")")
		case b.Audio != nil:
			got = append(got, "audio ("+b.Audio.MimeType+")")
		case b.ResourceLink != nil:
			got = append(got, "a link to "+b.ResourceLink.Uri)
		case b.Resource != nil:
			got = append(got, "a resource")
		}
	}
	if len(got) == 0 {
		return ""
	}
	return "I also got " + strings.Join(got, ", ") + "."
}

var planSteps = []string{"Read the README", "Edit mock.txt", "Answer the user"}

// editStep is the plan's step the edit does.
const editStep = 1

// plan sends the whole plan with the first done steps completed and the
// next one in progress.
func (t *turn) plan(done int) error {
	if err := t.pause(); err != nil {
		return err
	}
	entries := make([]acp.PlanEntry, len(planSteps))
	for i, c := range planSteps {
		st := acp.PlanEntryStatusPending
		switch {
		case i == editStep && t.editRejected:
		case i < done:
			st = acp.PlanEntryStatusCompleted
		case i == done:
			st = acp.PlanEntryStatusInProgress
		}
		entries[i] = acp.PlanEntry{Content: c, Priority: acp.PlanEntryPriorityMedium, Status: st}
	}
	t.ev.Update(acp.UpdatePlan(entries...))
	return nil
}

func (t *turn) read() error {
	id := t.s.nextCallID()
	path := filepath.Join(t.s.cwd, "README.md")
	t.ev.Update(named(acp.StartReadToolCall(id, "Read "+path, path), "read"))
	if err := t.pause(); err != nil {
		return err
	}
	t.ev.Update(acp.UpdateToolCall(id, agentkit.Named("read"), acp.WithUpdateStatus(acp.ToolCallStatusInProgress)))
	if err := t.pause(); err != nil {
		return err
	}
	text := "# Mock README\n\nThe mock agent made this up; it reads no files.\n"
	t.ev.Update(acp.UpdateToolCall(id, agentkit.Named("read"), acp.WithUpdateStatus(acp.ToolCallStatusCompleted),
		acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(text))}),
		acp.WithUpdateRawOutput(map[string]any{"content": text})))
	return nil
}

// edit proposes a diff and applies it (in make-believe) if allowed.
func (t *turn) edit() error {
	id := t.s.nextCallID()
	path := filepath.Join(t.s.cwd, "mock.txt")
	diff := acp.ToolDiffContent(path, "hello, world\n", "hello\n")
	t.ev.Update(named(acp.StartEditToolCall(id, "Edit "+path, path, "hello, world\n", acp.WithStartContent([]acp.ToolCallContent{diff})), "edit"))
	allowed, err := t.allowed(id, path, diff)
	if errors.Is(err, errAskCancelled) {
		t.ev.Update(acp.UpdateToolCall(id, agentkit.Named("edit"), acp.WithUpdateStatus(acp.ToolCallStatusFailed),
			acp.WithUpdateRawOutput(map[string]any{"error": "the permission ask was cancelled"})))
		return err
	}
	if err != nil || t.ctx.Err() != nil {
		return errors.Join(err, t.ctx.Err())
	}
	if !allowed {
		t.editRejected = true
		t.ev.Update(acp.UpdateToolCall(id, agentkit.Named("edit"), acp.WithUpdateStatus(acp.ToolCallStatusFailed),
			acp.WithUpdateRawOutput(map[string]any{"error": "the user rejected the edit"})))
		return nil
	}
	t.ev.Update(acp.UpdateToolCall(id, agentkit.Named("edit"), acp.WithUpdateStatus(acp.ToolCallStatusInProgress)))
	if err := t.pause(); err != nil {
		return err
	}
	t.ev.Update(acp.UpdateToolCall(id, agentkit.Named("edit"), acp.WithUpdateStatus(acp.ToolCallStatusCompleted),
		acp.WithUpdateRawOutput(map[string]any{"applied": true})))
	return nil
}

// allowed asks the client unless the mode or an earlier "always" says yes.
func (t *turn) allowed(id acp.ToolCallId, path string, diff acp.ToolCallContent) (bool, error) {
	t.s.mu.Lock()
	always := t.s.alwaysAllow
	t.s.mu.Unlock()
	skip := always || t.s.cfg.Get(agent.ConfigMode) == "acceptEdits"
	if skip {
		return true, nil
	}
	title, kind := "Edit "+path, acp.ToolKindEdit
	call := acp.ToolCallUpdate{ToolCallId: id, Name: acp.Ptr("edit"), Title: &title, Kind: &kind, Content: []acp.ToolCallContent{diff},
		Locations: []acp.ToolCallLocation{{Path: path}}, RawInput: map[string]any{"path": path, "content": "hello, world\n"}}
	out, err := t.ev.RequestPermission(t.ctx, call, []acp.PermissionOption{
		{OptionId: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
		{OptionId: "always", Name: "Always allow edits", Kind: acp.PermissionOptionKindAllowAlways},
		{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
	})
	if err != nil {
		return false, fmt.Errorf("asking permission to edit: %w", err)
	}
	if out.Selected == nil {
		return false, errAskCancelled
	}
	switch out.Selected.OptionId {
	case "always":
		t.s.mu.Lock()
		t.s.alwaysAllow = true
		t.s.mu.Unlock()
		return true, nil
	case "allow":
		return true, nil
	}
	return false, nil
}

// named is a tool_call with the mock's own name of its tool.
func named(u acp.SessionUpdate, tool string) acp.SessionUpdate {
	u.ToolCall.Name = &tool
	return u
}

// delegate runs a subagent: the session's "delegate" tool call announces
// it; the subagent reads, edits and answers under its own Events, in a
// context of its own (cancelSubagent), and the tool call ends with its
// answer, or failed if it was stopped.
func (t *turn) delegate() error {
	call := t.s.nextCallID()
	sub := "sub_" + string(call)
	task := "Look at the README and fix mock.txt"
	t.ev.Update(named(acp.StartToolCall(call, "Delegate: "+task, acp.WithStartKind(acp.ToolKindThink),
		acp.WithStartStatus(acp.ToolCallStatusInProgress), acp.WithStartRawInput(map[string]any{"prompt": task})), "delegate"))
	running := agent.Running()
	u := agent.SubagentUpdate(sub, "Delegated task", task, running)
	u.SubagentUpdate.Capabilities = &acp.SubagentSessionCapabilities{Cancel: &acp.SessionCancelCapabilities{}}
	u.SubagentUpdate.Meta = agent.SubagentOf(string(call))
	t.ev.Update(u)
	if t.has("background") {
		t.inBackground(call, sub, task)
		return nil
	}
	ctx, stop := context.WithCancel(t.ctx)
	defer stop()
	t.s.mu.Lock()
	t.s.subagents[sub] = stop
	t.s.mu.Unlock()
	defer func() {
		t.s.mu.Lock()
		delete(t.s.subagents, sub)
		t.s.mu.Unlock()
	}()
	child := &turn{s: t.s, ev: t.ev.Child(sub), ctx: ctx, words: t.words, delay: t.delay}
	child.ev.Update(acp.UpdateUserMessageText(task))
	answer := "Done: mock.txt now says hello."
	err := child.read()
	if err == nil {
		err = child.edit()
	}
	if err == nil {
		err = child.stream(answer, acp.UpdateAgentMessageText)
	}
	switch {
	case t.ctx.Err() != nil:
		return t.ctx.Err() // the turn is cancelled: the bridge ends the subagent
	case ctx.Err() != nil, errors.Is(err, errAskCancelled):
		t.ev.Update(agent.SubagentUpdate(sub, "", "", agent.Idle(acp.StopReasonCancelled)))
		t.ev.Update(acp.UpdateToolCall(call, agentkit.Named("delegate"), acp.WithUpdateStatus(acp.ToolCallStatusFailed),
			acp.WithUpdateRawOutput(map[string]any{"error": "the subagent was stopped"})))
		return nil
	case err != nil:
		return err
	}
	t.ev.Update(agent.SubagentUpdate(sub, "", "", agent.Idle(acp.StopReasonEndTurn)))
	t.ev.Update(acp.UpdateToolCall(call, agentkit.Named("delegate"), acp.WithUpdateStatus(acp.ToolCallStatusCompleted),
		acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(answer))}),
		acp.WithUpdateRawOutput(map[string]any{"answer": answer})))
	return nil
}

// inBackground ends the delegate tool call at once, its subagent started
// in the background (as Claude Code's Agent with run_in_background): it
// reads, says it watches, and works on after the turn until it is
// cancelled alone (session/cancel of its id) or the session closes.
func (t *turn) inBackground(call acp.ToolCallId, sub, task string) {
	ctx, stop := context.WithCancel(t.s.closed)
	t.s.mu.Lock()
	t.s.subagents[sub] = stop
	t.s.mu.Unlock()
	t.ev.Update(acp.UpdateToolCall(call, agentkit.Named("delegate"), acp.WithUpdateStatus(acp.ToolCallStatusCompleted),
		acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock("Started in the background: " + task))})))
	child := &turn{s: t.s, ev: t.ev.Child(sub), ctx: ctx, words: t.words, delay: t.delay}
	t.s.bg.Go(func() {
		defer func() {
			stop()
			t.s.mu.Lock()
			delete(t.s.subagents, sub)
			t.s.mu.Unlock()
		}()
		child.ev.Update(acp.UpdateUserMessageText(task))
		if child.read() == nil && child.stream("Watching the README in the background.", acp.UpdateAgentMessageText) == nil {
			<-ctx.Done()
		}
		t.ev.Update(agent.SubagentUpdate(sub, "", "", agent.Idle(acp.StopReasonCancelled)))
	})
}
