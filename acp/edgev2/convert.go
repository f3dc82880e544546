package edgev2

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/acpbridge/acpbridge/bridge"
	acpv2 "github.com/acpbridge/acpbridge/third_party/acpv2"
	"github.com/coder/acp-go-sdk"
)

// client is the v2 client as the bridge sees it: a v1 Client whose updates
// and asks this edge re-encodes. It has no Peer: v2 removed the client's fs
// and terminal methods, so the agent writes files itself (the bridge's
// edits option says so), and a replay is sent update by update.
type client struct{ c *conn }

var _ bridge.Client = client{}

func (client) Peer() bridge.Peer { return nil }

// SessionUpdate sends a v1 update as its v2 form; one v2 has no form for
// (current_mode_update: modes are config options in v2) is dropped.
func (cl client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	sid := string(n.SessionId)
	u, ok, err := cl.c.toV2(sid, n.Update)
	if err != nil {
		cl.c.log.Debug("an update v2 cannot carry was dropped", "session", sid, "err", err)
		return nil
	}
	if ok {
		cl.c.notify(sid, u)
	}
	if su := n.Update.SubagentUpdate; su != nil {
		cl.c.kidUpdate(sid, su)
	}
	return nil
}

// toV2 is a v1 update as v2's: tool_call becomes the tool_call_update
// that creates it (its diffs v2's, see diff.go), plan a plan_update of items, config options get
// configId; chunks keep the message id the bridge stamped (or get one per
// run of a kind). ok is false for an update v2 has no form for.
func (c *conn) toV2(sid string, u acp.SessionUpdate) (acpv2.SessionUpdate, bool, error) {
	if u.CurrentModeUpdate != nil {
		return acpv2.SessionUpdate{}, false, nil
	}
	b, err := json.Marshal(u)
	if err != nil {
		return acpv2.SessionUpdate{}, false, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return acpv2.SessionUpdate{}, false, err
	}
	kind, _ := m["sessionUpdate"].(string)
	switch kind {
	case "tool_call":
		m["sessionUpdate"] = "tool_call_update"
		c.cancelledStatus(sid, m)
		toV2Diffs(m)
	case "tool_call_update":
		c.cancelledStatus(sid, m)
		toV2Diffs(m)
	case "plan":
		m = map[string]any{"sessionUpdate": "plan_update",
			"plan": map[string]any{"type": "items", "planId": "plan", "entries": m["entries"]}}
	case "config_option_update":
		m["configOptions"] = withConfigIDs(m["configOptions"])
	case "user_message_chunk", "agent_message_chunk", "agent_thought_chunk":
		c.stampMessage(sid, kind, m)
	}
	b, err = json.Marshal(m)
	if err != nil {
		return acpv2.SessionUpdate{}, false, err
	}
	var out acpv2.SessionUpdate
	if err := json.Unmarshal(b, &out); err != nil {
		return acpv2.SessionUpdate{}, false, fmt.Errorf("%s: %w", kind, err)
	}
	return out, true, nil
}

// stampMessage gives a chunk without a messageId (v2 requires one) the id
// of the run of chunks of its kind it belongs to.
func (c *conn) stampMessage(sid, kind string, m map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := m["messageId"].(string); ok && id != "" {
		c.msgs[sid] = kind + "\x00" + id
		return
	}
	last := c.msgs[sid]
	if len(last) > len(kind) && last[:len(kind)+1] == kind+"\x00" {
		m["messageId"] = last[len(kind)+1:]
		return
	}
	id := bridge.NewMessageID()
	c.msgs[sid] = kind + "\x00" + id
	m["messageId"] = id
}

// withConfigIDs renames v1's config option "id" to v2's "configId".
func withConfigIDs(v any) any {
	opts, _ := v.([]any)
	for _, o := range opts {
		if om, ok := o.(map[string]any); ok {
			if id, ok := om["id"]; ok {
				om["configId"] = id
				delete(om, "id")
			}
		}
	}
	return v
}

// configOptions are v1's config options as v2's.
func configOptions(opts []acp.SessionConfigOption) ([]acpv2.SessionConfigOption, error) {
	b, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	var out []acpv2.SessionConfigOption
	if err := convert(withConfigIDs(v), &out); err != nil {
		return nil, fmt.Errorf("config options: %w", err)
	}
	return out, nil
}

// v1Capabilities is what the bridge is told a v2 client offers: no fs or
// terminal (v2 has none), notices, compaction and subagents, which every
// v2 client takes, and its terminal auth.
func v1Capabilities(v2 acpv2.ClientCapabilities) acp.ClientCapabilities {
	caps := acp.ClientCapabilities{
		Session: &acp.ClientSessionCapabilities{
			Notices:    &acp.NoticeCapabilities{},
			Compaction: &acp.CompactionCapabilities{},
		},
		Subagents: &acp.SubagentCapabilities{},
	}
	if v2.Elicitation != nil {
		convert(v2.Elicitation, &caps.Elicitation)
	}
	caps.Auth.Terminal = v2.Auth != nil && v2.Auth.Terminal != nil
	caps.Meta = v2.Meta // Zed's "terminal-auth" among them
	return caps
}

// authMethods are v1's auth methods in v2's shape: "id" is "methodId", and
// every method names its "type" ("agent" for one v1 leaves untyped).
func authMethods(v1 []acp.AuthMethod) ([]acpv2.AuthMethod, error) {
	out := []acpv2.AuthMethod{}
	for _, m := range v1 {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		var fields map[string]any
		if err := json.Unmarshal(b, &fields); err != nil {
			return nil, err
		}
		fields["methodId"] = fields["id"]
		delete(fields, "id")
		if _, ok := fields["type"]; !ok {
			fields["type"] = "agent"
		}
		var v2 acpv2.AuthMethod
		if err := convert(fields, &v2); err != nil {
			return nil, fmt.Errorf("auth method %v: %w", fields["methodId"], err)
		}
		out = append(out, v2)
	}
	return out, nil
}

func promptCaps(p acp.PromptCapabilities) *acpv2.PromptCapabilities {
	out := &acpv2.PromptCapabilities{}
	if p.Image {
		out.Image = &acpv2.PromptImageCapabilities{}
	}
	if p.Audio {
		out.Audio = &acpv2.PromptAudioCapabilities{}
	}
	if p.EmbeddedContext {
		out.EmbeddedContext = &acpv2.PromptEmbeddedContextCapabilities{}
	}
	return out
}

func mcpCaps(m acp.McpCapabilities) *acpv2.McpCapabilities {
	out := &acpv2.McpCapabilities{Stdio: &acpv2.McpStdioCapabilities{}}
	if m.Http {
		out.Http = &acpv2.McpHttpCapabilities{}
	}
	return out
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
