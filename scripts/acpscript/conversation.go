package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
)

// conversation renders an ACP session for a person (--show conversation):
// the prompts sent as "> text", the agent's message and thoughts as they
// stream, tool calls with their status, the plan, permission answers, and
// each response in a line of its own ("· …"). It knows only ACP's wire
// format, not any agent.
type conversation struct {
	mu      sync.Mutex
	out     io.Writer
	err     error  // the first write error
	open    string // the streaming chunk kind whose line is not ended yet
	tools   map[string]toolState
	methods map[string]string // request id key → method, for responses
}

type toolState struct{ kind, title, status string }

func newConversation(out io.Writer) *conversation {
	return &conversation{out: out, tools: map[string]toolState{}, methods: map[string]string{}}
}

// sent shows a message the script sent.
func (c *conversation) sent(m message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if hasID(m.ID) {
		c.methods[idKey(m.ID)] = m.Method
	}
	switch m.Method {
	case "session/prompt":
		var p struct {
			Prompt []contentBlock `json:"prompt"`
		}
		json.Unmarshal(m.Params, &p)
		var parts []string
		for _, b := range p.Prompt {
			parts = append(parts, b.show())
		}
		c.line("\n> " + strings.Join(parts, " "))
	case "session/set_config_option":
		var p struct {
			ConfigID string `json:"configId"`
			Value    any    `json:"value"`
		}
		json.Unmarshal(m.Params, &p)
		c.line(fmt.Sprintf("· set %s = %v", p.ConfigID, p.Value))
	case "session/cancel":
		c.line("· cancel")
	}
}

// received shows a message from the agent.
func (c *conversation) received(m message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case m.Method == "session/update":
		c.update(m.Params)
	case m.Method == "session/request_permission":
		// note shows the answer
	case m.Method != "":
		c.line("· the agent asks " + m.Method)
	case m.Error != nil:
		c.line(fmt.Sprintf("! %s failed: %s", c.methods[idKey(m.ID)], m.Error))
	default:
		c.response(c.methods[idKey(m.ID)], m.Result)
	}
}

// note shows what the driver did, such as a permission answer.
func (c *conversation) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.line("  ? " + s)
}

// configOption is a session's config option as ACP sends it.
type configOption struct {
	ID           string `json:"id"`
	CurrentValue any    `json:"currentValue"`
}

// showOptions shows config options as "id=value, …".
func showOptions(opts []configOption) string {
	var parts []string
	for _, o := range opts {
		parts = append(parts, fmt.Sprintf("%s=%v", o.ID, o.CurrentValue))
	}
	return strings.Join(parts, ", ")
}

// result is the part of a response's result a person reads.
type result struct {
	AgentInfo *struct {
		Name, Version string
	} `json:"agentInfo"`
	ProtocolVersion int            `json:"protocolVersion"`
	SessionID       string         `json:"sessionId"`
	ConfigOptions   []configOption `json:"configOptions"`
	StopReason      string         `json:"stopReason"`
	Usage           *struct {
		InputTokens  int `json:"inputTokens"`
		OutputTokens int `json:"outputTokens"`
	} `json:"usage"`
	Sessions []struct {
		SessionID string `json:"sessionId"`
		Title     string `json:"title"`
		Cwd       string `json:"cwd"`
	} `json:"sessions"`
}

// response shows the response to a request for method.
func (c *conversation) response(method string, raw json.RawMessage) {
	var r result
	json.Unmarshal(raw, &r)
	switch method {
	case "initialize":
		if r.AgentInfo != nil {
			c.line(fmt.Sprintf("· initialize: %s %s, ACP protocol %d", r.AgentInfo.Name, r.AgentInfo.Version, r.ProtocolVersion))
		}
	case "session/new", "session/load", "session/resume":
		c.sessionOpened(method, r)
	case "session/prompt":
		c.stopped(r)
	case "session/list":
		c.listed(r)
	default:
		c.line("· " + method + ": ok")
	}
}

// sessionOpened shows the response to a session/new, load or resume.
func (c *conversation) sessionOpened(method string, r result) {
	id := r.SessionID
	if id == "" {
		id = "loaded"
	}
	c.line(fmt.Sprintf("· %s: session %s (%s)", method, id, showOptions(r.ConfigOptions)))
}

// stopped shows the response to a session/prompt: why the turn stopped.
func (c *conversation) stopped(r result) {
	s := "· stop: " + r.StopReason
	if r.Usage != nil {
		s += fmt.Sprintf(" (%d tokens in, %d out)", r.Usage.InputTokens, r.Usage.OutputTokens)
	}
	c.line(s)
}

// listed shows the response to a session/list.
func (c *conversation) listed(r result) {
	c.line(fmt.Sprintf("· session/list: %d session(s)", len(r.Sessions)))
	for _, s := range r.Sessions {
		c.line(fmt.Sprintf("    %s  %q  %s", s.SessionID, s.Title, s.Cwd))
	}
}

// sessionUpdate is the part of a session/update a person reads.
type sessionUpdate struct {
	Kind       string          `json:"sessionUpdate"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"toolCallId"`
	Title      *string         `json:"title"`
	ToolKind   *string         `json:"kind"`
	Status     *string         `json:"status"`
	Entries    []struct {
		Content string `json:"content"`
		Status  string `json:"status"`
	} `json:"entries"`
	ConfigOptions []configOption `json:"configOptions"`
	CurrentModeID string         `json:"currentModeId"`
}

// update shows one session/update.
func (c *conversation) update(params json.RawMessage) {
	var p struct {
		Update sessionUpdate `json:"update"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	u := p.Update
	switch u.Kind {
	case "agent_message_chunk", "agent_thought_chunk", "user_message_chunk":
		var b contentBlock
		json.Unmarshal(u.Content, &b)
		c.chunk(u.Kind, b.show())
	case "tool_call", "tool_call_update":
		c.toolCall(u)
	case "plan":
		c.plan(u)
	case "current_mode_update":
		c.line("· mode: " + u.CurrentModeID)
	case "config_option_update":
		c.line("· options: " + showOptions(u.ConfigOptions))
	}
}

// toolCall shows a tool call, or an update of one that changes its
// status, unless it is in progress.
func (c *conversation) toolCall(u sessionUpdate) {
	t := c.tools[u.ToolCallID]
	set(&t.title, u.Title)
	set(&t.kind, u.ToolKind)
	changed := set(&t.status, u.Status) || u.Kind == "tool_call"
	c.tools[u.ToolCallID] = t
	if changed && t.status != "in_progress" {
		c.line(fmt.Sprintf("  [%s] %s: %s", or(t.kind, "tool"), t.title, or(t.status, "pending")))
	}
}

// plan shows a plan, its steps marked by status.
func (c *conversation) plan(u sessionUpdate) {
	var steps []string
	for _, e := range u.Entries {
		steps = append(steps, planMark[e.Status]+" "+e.Content)
	}
	c.line("  plan: " + strings.Join(steps, "  "))
}

var planMark = map[string]string{"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}

var chunkPrefix = map[string]string{
	"agent_message_chunk": "agent: ", "agent_thought_chunk": "  (thinking) ", "user_message_chunk": "user: ",
}

// chunk streams text: chunks of one kind run on in one paragraph.
func (c *conversation) chunk(kind, text string) {
	if c.open != kind {
		c.end()
		c.write(chunkPrefix[kind])
		c.open = kind
	}
	c.write(text)
}

// line writes s on a line of its own.
func (c *conversation) line(s string) {
	c.end()
	c.write(s + "\n")
}

// end ends a streaming paragraph.
func (c *conversation) end() {
	if c.open != "" {
		c.write("\n")
		c.open = ""
	}
}

func (c *conversation) write(s string) {
	if _, err := io.WriteString(c.out, s); err != nil && c.err == nil {
		c.err = err
	}
}

func (c *conversation) writeErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.end()
	return c.err
}

// contentBlock is the part of an ACP content block a person reads.
type contentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	MimeType string `json:"mimeType"`
	URI      string `json:"uri"`
	Resource struct {
		URI string `json:"uri"`
	} `json:"resource"`
}

func (b contentBlock) show() string {
	switch b.Type {
	case "text":
		return b.Text
	case "resource_link":
		return "[link " + b.URI + "]"
	case "resource":
		return "[file " + b.Resource.URI + "]"
	default:
		return "[" + b.Type + " " + b.MimeType + "]"
	}
}

// set stores *v in *dst when v is given and differs; it reports a change.
func set(dst *string, v *string) bool {
	if v == nil || *v == *dst {
		return false
	}
	*dst = *v
	return true
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
