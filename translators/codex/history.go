package codex

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// Caps: a thread's history is codex's own (thread/resume returns it);
// a spawned agent's turn can be interrupted alone.
func (s *session) Caps() agent.SessionCaps {
	return agent.SessionCaps{History: s.History, CancelChild: s.interruptChild}
}

// History is the thread's conversation as thread/resume returned it (or,
// once the session has been prompted since, as thread/read returns it
// now), as ACP updates: user messages, agent messages, reasoning and tool
// calls in their final state.
func (s *session) History(ctx context.Context) ([]acp.SessionUpdate, error) {
	if err := s.at.Ready(ctx); err != nil {
		return nil, err
	}
	raw, err := s.turnsNow(ctx)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var turns []struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &turns); err != nil {
		return nil, fmt.Errorf("decoding codex history: %w", err)
	}
	tr := NewTranslator(s.cwd)
	var out []acp.SessionUpdate
	for _, turn := range turns {
		for _, it := range turn.Items {
			us, err := historyItem(tr, it)
			if err != nil {
				return nil, err
			}
			out = append(out, us...)
		}
	}
	return out, nil
}

// turnsNow is the thread's turns: as opened, unless it was prompted since,
// when they are read again (an editor loading a session that is live in
// this bridge, or another connection taking it over, must see its turns).
func (s *session) turnsNow(ctx context.Context) (json.RawMessage, error) {
	s.mu.Lock()
	raw, stale, thread := s.history, s.prompted, s.thread
	s.mu.Unlock()
	if !stale {
		return raw, nil
	}
	srv, err := s.at.Server(ctx)
	if err != nil {
		return nil, err
	}
	var res threadResult
	if err := srv.call(ctx, "thread/read", map[string]any{"threadId": thread, "includeTurns": true}, &res); err != nil {
		s.log.Warn("codex: can't read the thread again; its history is what it was when the session opened", "thread", thread, "err", err)
		return raw, nil
	}
	s.mu.Lock()
	s.history, s.prompted = res.Thread.Turns, false
	s.mu.Unlock()
	return res.Thread.Turns, nil
}

// historyItem replays one stored item: a user message as the user's
// chunks, anything else as if it had just completed.
func historyItem(tr *Translator, raw json.RawMessage) ([]acp.SessionUpdate, error) {
	var it struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
			URL  string `json:"url"`
			Path string `json:"path"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &it); err != nil {
		return nil, fmt.Errorf("decoding a codex history item: %w", err)
	}
	if it.Type != "userMessage" {
		out, err := tr.completed(raw)
		return out.Updates, err
	}
	var us []acp.SessionUpdate
	for _, c := range it.Content {
		switch c.Type {
		case "text":
			us = append(us, acp.UpdateUserMessageText(c.Text))
		case "image", "localImage":
			us = append(us, acp.UpdateUserMessageText("[image "+cmp.Or(c.Path, "attached")+"]"))
		}
	}
	return us, nil
}
