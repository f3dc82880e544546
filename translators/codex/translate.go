package codex

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// Translator turns codex app-server notifications about one thread into ACP
// session updates. It is not safe for concurrent use; the session
// serialises calls.
type Translator struct {
	cwd       string
	children  map[string]*child            // spawned agents' threads, by id (see subagents.go)
	told      map[string]bool              // collab calls already told as messages to a child
	tools     map[string]bool              // item ids announced as tool calls
	infos     map[string]agentkit.ToolInfo // how each was shown, for asks about it
	turnUsage *acp.Usage                   // the running turn's tokens so far
	streamed  map[string]bool              // agentMessage and reasoning ids that had deltas
	output    map[string]*strings.Builder  // commandExecution output so far, by item id
}

// NewTranslator returns a Translator for a thread working in cwd.
func NewTranslator(cwd string) *Translator {
	return &Translator{cwd: cwd, children: map[string]*child{}, told: map[string]bool{}, tools: map[string]bool{}, infos: map[string]agentkit.ToolInfo{}, streamed: map[string]bool{}, output: map[string]*strings.Builder{}}
}

// Output is what one notification means.
type Output struct {
	Updates []acp.SessionUpdate
	// End is set by turn/completed.
	End *TurnEnd
	// Err is the message of an error notification that ends the turn.
	Err string
	// Retry is the message of an error codex retries the request after.
	Retry string
	// Skipped names a notification the translator ignores.
	Skipped string
	// Child, if set, is the child session (a spawned agent's thread; see
	// subagents.go) that ChildUpdates are of; they follow Updates, which
	// are the session's own.
	Child        string
	ChildUpdates []acp.SessionUpdate
	// Spawned are the threads of spawned agents the notification
	// announced: their notifications and approvals are the session's.
	Spawned []string
	// Interrupt is a spawned agent's turn that just started, which the
	// client cancelled before (see Translator.InterruptChild).
	Interrupt *turnRef
}

// TurnEnd is how a turn ended.
type TurnEnd struct {
	TurnID string
	Status string     // completed, interrupted, failed
	Err    string     // the turn's error message, if it failed
	Usage  *acp.Usage // the turn's model requests, summed; nil if codex reported none
}

// result is the bridge's view of the turn's end; lastErr is the message
// of the turn's last error notification, which a failed turn may not
// repeat.
func (end *TurnEnd) result(lastErr string) (agent.TurnResult, error) {
	switch end.Status {
	case "interrupted":
		return agent.TurnResult{StopReason: acp.StopReasonCancelled}, nil
	case "failed":
		msg := cmp.Or(end.Err, lastErr)
		if strings.Contains(msg, "(unauthorized)") {
			return agent.TurnResult{}, fmt.Errorf("%w: %s — log in with `codex login`, or set your provider's API key", agent.ErrAuthRequired, msg)
		}
		return agent.TurnResult{}, errors.New(cmp.Or(msg, "the turn failed"))
	}
	return agent.TurnResult{StopReason: acp.StopReasonEndTurn, Usage: end.Usage}, nil
}

// params holds the fields the notifications share; item is decoded later.
type params struct {
	ThreadID     string          `json:"threadId"`
	TurnID       string          `json:"turnId"`
	ItemID       string          `json:"itemId"`
	Item         json.RawMessage `json:"item"`
	Delta        string          `json:"delta"`
	SummaryIndex int             `json:"summaryIndex"`
	Explanation  string          `json:"explanation"`
	Plan         []planStep      `json:"plan"`
	ThreadName   *string         `json:"threadName"`
	Turn         *turnDoc        `json:"turn"`
	Error        *errorDoc       `json:"error"`
	WillRetry    bool            `json:"willRetry"`
	TokenUsage   *tokenUsage     `json:"tokenUsage"`
}

type planStep struct {
	Step   string `json:"step"`
	Status string `json:"status"`
}

type turnDoc struct {
	ID     string    `json:"id"`
	Status string    `json:"status"`
	Error  *errorDoc `json:"error"`
	Items  []json.RawMessage
}

type errorDoc struct {
	Message        string          `json:"message"`
	CodexErrorInfo json.RawMessage `json:"codexErrorInfo"`
}

// tokenUsage is thread/tokenUsage/updated's: last is the latest model
// request's, total the thread's so far.
type tokenUsage struct {
	Last               tokenCounts `json:"last"`
	ModelContextWindow int         `json:"modelContextWindow"`
}

type tokenCounts struct {
	TotalTokens           int `json:"totalTokens"`
	InputTokens           int `json:"inputTokens"`
	CachedInputTokens     int `json:"cachedInputTokens"`
	OutputTokens          int `json:"outputTokens"`
	ReasoningOutputTokens int `json:"reasoningOutputTokens"`
}

// Translate decodes one notification: of the thread's own, or of a
// spawned agent's thread the translator announced (a child session).
func (t *Translator) Translate(method string, raw json.RawMessage) (Output, error) {
	var p params
	if err := json.Unmarshal(raw, &p); err != nil {
		return Output{}, fmt.Errorf("decoding %s: %w", method, err)
	}
	if c := t.children[p.ThreadID]; c != nil {
		return t.childNotification(c, method, raw, p)
	}
	return t.translate(method, raw, p)
}

// translate decodes one notification of the thread t translates.
func (t *Translator) translate(method string, raw json.RawMessage, p params) (Output, error) {
	switch method {
	case "item/started":
		return t.started(p.Item)
	case "item/completed":
		return t.completed(p.Item)
	case "item/agentMessage/delta":
		t.streamed[p.ItemID] = true
		return updates(acp.UpdateAgentMessageText(p.Delta)), nil
	case "item/reasoning/summaryTextDelta", "item/reasoning/textDelta":
		t.streamed[p.ItemID] = true
		return updates(acp.UpdateAgentThoughtText(p.Delta)), nil
	case "item/reasoning/summaryPartAdded":
		if p.SummaryIndex > 0 {
			return updates(acp.UpdateAgentThoughtText("\n\n")), nil
		}
		return Output{}, nil
	case "item/commandExecution/outputDelta":
		return t.outputDelta(p.ItemID, p.Delta), nil
	case "turn/plan/updated":
		return updates(plan(p.Plan)), nil
	case "thread/tokenUsage/updated":
		return t.usage(p.TokenUsage), nil
	case "thread/name/updated":
		return updates(acp.SessionUpdate{SessionInfoUpdate: &acp.SessionSessionInfoUpdate{Title: p.ThreadName}}), nil
	case "turn/completed":
		return t.turnCompleted(p.Turn), nil
	case "error":
		switch {
		case p.Error != nil && p.WillRetry:
			return Output{Retry: errorText(p.Error)}, nil
		case p.Error != nil:
			return Output{Err: errorText(p.Error), Updates: errorNotice(p.Error)}, nil
		}
		return Output{}, nil
	}
	return Output{Skipped: method}, nil
}

func updates(us ...acp.SessionUpdate) Output { return Output{Updates: us} }

// retryNotice tells the client that codex retries a failed model request:
// attempt n, of at most limit before the bridge gives up.
func retryNotice(n, limit int, msg string) acp.SessionUpdate {
	return agentkit.Notice(acp.NoticeSeverityWarning, fmt.Sprintf("Codex is retrying the model request (retry %d; acpbridge gives up after %d)", n, limit), msg)
}

// item is the union of the item types the bridge shows.
type item struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Text             string          `json:"text"`
	Summary          []string        `json:"summary"`
	Content          json.RawMessage `json:"content"`
	Command          string          `json:"command"`
	Cwd              string          `json:"cwd"`
	Status           string          `json:"status"`
	CommandActions   []commandAction `json:"commandActions"`
	AggregatedOutput *string         `json:"aggregatedOutput"`
	ExitCode         *int            `json:"exitCode"`
	Changes          []fileChange    `json:"changes"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        any             `json:"arguments"`
	Result           *mcpResult      `json:"result"`
	Error            *errorDoc       `json:"error"`
	Query            string          `json:"query"`
	Action           *webAction      `json:"action"`
	Path             string          `json:"path"`
	// subAgentActivity's and collabAgentToolCall's (see subagents.go)
	Kind              string   `json:"kind"`
	AgentThreadID     string   `json:"agentThreadId"`
	AgentPath         string   `json:"agentPath"`
	ReceiverThreadIDs []string `json:"receiverThreadIds"`
	Prompt            string   `json:"prompt"`
}

type commandAction struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Path    string `json:"path"`
	Name    string `json:"name"`
	Query   string `json:"query"`
}

type fileChange struct {
	Path string `json:"path"`
	Kind struct {
		Type string `json:"type"`
	} `json:"kind"`
	Diff string `json:"diff"`
}

type mcpResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

type webAction struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

func decodeItem(raw json.RawMessage) (item, error) {
	var it item
	if err := json.Unmarshal(raw, &it); err != nil {
		return it, fmt.Errorf("decoding item: %w", err)
	}
	return it, nil
}

// started announces a tool item; messages wait for their deltas.
func (t *Translator) started(raw json.RawMessage) (Output, error) {
	it, err := decodeItem(raw)
	if err != nil {
		return Output{}, err
	}
	info, ok := describe(it, t.cwd)
	if !ok {
		return Output{}, nil
	}
	us := t.announce(it.ID, info, acp.ToolCallStatusInProgress)
	if it.Type == "contextCompaction" {
		return compaction(it.ID, acp.CompactionStatusInProgress, us), nil
	}
	return withSpawned(updates(us...), t.spawn(it)), nil
}

// withSpawned is out followed by what spawn made of the same item.
func withSpawned(out, spawned Output) Output {
	out.Updates = append(out.Updates, spawned.Updates...)
	out.Child, out.ChildUpdates, out.Spawned = spawned.Child, spawned.ChildUpdates, spawned.Spawned
	return out
}

// compaction is a contextCompaction item as a compaction update (codex's
// item has no summary to show), with its think tool call as the fallback
// for a client that takes no compaction updates.
func compaction(id string, status acp.CompactionStatus, fallback []acp.SessionUpdate) Output {
	return updates(agentkit.Compaction(id, status, "", "", fallback...))
}

// Announce makes sure a tool call exists for an approval about an item the
// notifications have not shown (yet).
func (t *Translator) Announce(id string, info agentkit.ToolInfo) []acp.SessionUpdate {
	if t.tools[id] {
		return nil
	}
	return t.announce(id, info, acp.ToolCallStatusPending)
}

func (t *Translator) announce(id string, info agentkit.ToolInfo, status acp.ToolCallStatus) []acp.SessionUpdate {
	if t.tools[id] {
		return []acp.SessionUpdate{info.Refresh(id, acp.WithUpdateStatus(status))}
	}
	t.tools[id] = true
	t.infos[id] = info
	return []acp.SessionUpdate{info.Start(id, status)}
}

// Shown is how the tool call of item id was shown, if it was: an ask about
// a file change carries the diffs its item/started showed.
func (t *Translator) Shown(id string) (agentkit.ToolInfo, bool) {
	info, ok := t.infos[id]
	return info, ok
}

// completed shows a finished message (unless its deltas already did) or
// finishes a tool call.
func (t *Translator) completed(raw json.RawMessage) (Output, error) {
	it, err := decodeItem(raw)
	if err != nil {
		return Output{}, err
	}
	switch it.Type {
	case "agentMessage":
		if t.streamed[it.ID] || it.Text == "" {
			return Output{}, nil
		}
		return updates(acp.UpdateAgentMessageText(it.Text)), nil
	case "reasoning":
		if t.streamed[it.ID] || len(it.Summary) == 0 {
			return Output{}, nil
		}
		return updates(acp.UpdateAgentThoughtText(strings.Join(it.Summary, "\n\n"))), nil
	}
	info, ok := describe(it, t.cwd)
	if !ok {
		return Output{}, nil
	}
	var out []acp.SessionUpdate
	if !t.tools[it.ID] { // completed with no start seen (a history replay)
		out = t.announce(it.ID, info, acp.ToolCallStatusInProgress)
	}
	delete(t.output, it.ID)
	out = append(out, finish(it))
	if it.Type == "contextCompaction" {
		return compaction(it.ID, acp.CompactionStatusCompleted, out), nil
	}
	return withSpawned(updates(out...), t.spawn(it)), nil
}

// outputDelta streams a command's output; content replaces the whole
// collection, so each update carries all of it so far.
func (t *Translator) outputDelta(id, delta string) Output {
	b := t.output[id]
	if b == nil {
		b = &strings.Builder{}
		t.output[id] = b
	}
	b.WriteString(delta)
	return updates(acp.UpdateToolCall(acp.ToolCallId(id), agentkit.Named(t.infos[id].Name), acp.WithUpdateContent(agentkit.Console(b.String()))))
}

// usage shows how full the context is, and adds the latest request's
// tokens to the turn's usage.
func (t *Translator) usage(u *tokenUsage) Output {
	if u == nil {
		return Output{}
	}
	t.addUsage(u.Last)
	if u.ModelContextWindow == 0 {
		return Output{}
	}
	return updates(acp.SessionUpdate{UsageUpdate: &acp.SessionUsageUpdate{Used: u.Last.TotalTokens, Size: u.ModelContextWindow}})
}

func (t *Translator) turnCompleted(turn *turnDoc) Output {
	if turn == nil {
		return Output{}
	}
	end := &TurnEnd{TurnID: turn.ID, Status: turn.Status, Usage: t.turnUsage}
	t.turnUsage = nil
	if turn.Error != nil {
		end.Err = errorText(turn.Error)
	}
	return Output{End: end}
}

func (t *Translator) addUsage(c tokenCounts) {
	if t.turnUsage == nil {
		t.turnUsage = &acp.Usage{}
	}
	u := t.turnUsage
	u.InputTokens += c.InputTokens
	u.OutputTokens += c.OutputTokens
	u.TotalTokens += c.TotalTokens
	u.CachedReadTokens = addTo(u.CachedReadTokens, c.CachedInputTokens)
	u.ThoughtTokens = addTo(u.ThoughtTokens, c.ReasoningOutputTokens)
}

// addTo adds n to an optional count, leaving it unset while it is 0.
func addTo(p *int, n int) *int {
	if p == nil && n == 0 {
		return nil
	}
	sum := n
	if p != nil {
		sum += *p
	}
	return &sum
}

// errorText is codex's message with its error kind, which says more than
// the (rewritten, generic) message alone.
func errorText(e *errorDoc) string {
	kind := strings.Trim(string(e.CodexErrorInfo), `"`)
	if kind == "" || kind == "null" {
		return e.Message
	}
	return e.Message + " (" + kind + ")"
}

func plan(steps []planStep) acp.SessionUpdate {
	entries := make([]acp.PlanEntry, len(steps))
	for i, s := range steps {
		entries[i] = agentkit.PlanEntry(s.Step, s.Status, "")
	}
	return acp.UpdatePlan(entries...)
}

// limitErrors are the codexErrorInfo kinds of a limit the user reached,
// told as an error notice beside the turn's error: what the limit is.
var limitErrors = map[string]string{
	"usageLimitExceeded":    "Codex's usage limit is reached",
	"rateLimitExceeded":     "Codex's rate limit is reached",
	"sessionBudgetExceeded": "Codex's session budget is spent",
	"contextWindowExceeded": "The conversation no longer fits the model's context window",
}

// errorNotice is the notice of an error that is a limit reached, none
// for another.
func errorNotice(e *errorDoc) []acp.SessionUpdate {
	title, ok := limitErrors[strings.Trim(string(e.CodexErrorInfo), `"`)]
	if !ok {
		return nil
	}
	return []acp.SessionUpdate{agentkit.Notice(acp.NoticeSeverityError, title, e.Message)}
}
