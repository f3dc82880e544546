package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

// askWith is an open ask offering options (id:kind).
func askWith(options ...string) *ask {
	var req sdk.RequestPermissionRequest
	for _, o := range options {
		id, kind, _ := strings.Cut(o, ":")
		req.Options = append(req.Options, sdk.PermissionOption{OptionId: sdk.PermissionOptionId(id), Name: id, Kind: sdk.PermissionOptionKind(kind)})
	}
	return newAsk("ask_1", req)
}

// outcomeText is an outcome as "selected X" or "cancelled".
func outcomeText(o sdk.RequestPermissionOutcome) string {
	if o.Selected != nil {
		return "selected " + string(o.Selected.OptionId)
	}
	return "cancelled"
}

// An approval answers the ask with the option the client named, else the
// first that allows (approved) or rejects, else cancelled.
func TestOutcomeOf(t *testing.T) {
	full := []string{"always:allow_always", "once:allow_once", "no:reject_once", "never:reject_always"}
	for _, tc := range []struct {
		name     string
		options  []string
		approved bool
		optionID string
		want     string
		bad      bool
	}{
		{"approved takes allow_once first", full, true, "", "selected once", false},
		{"denied takes reject_once first", full, false, "", "selected no", false},
		{"a named option", full, true, "always", "selected always", false},
		{"a named option that is not the ask's", full, true, "bogus", "", true},
		{"only allow_always", []string{"a:allow_always"}, true, "", "selected a", false},
		{"no option that rejects", []string{"a:allow_once"}, false, "", "cancelled", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := outcomeOf(askWith(tc.options...), tc.approved, tc.optionID)
			if tc.bad {
				if !errors.Is(err, errBadRequest) {
					t.Fatalf("err = %v, want a bad request", err)
				}
				return
			}
			if err != nil || outcomeText(got) != tc.want {
				t.Errorf("got %q, %v; want %q", outcomeText(got), err, tc.want)
			}
		})
	}
}

// A resume entry: resolved with an optionId (or approved), or cancelled.
func TestResumeOutcome(t *testing.T) {
	yes, no := true, false
	a := askWith("ok:allow_once", "nope:reject_once")
	for _, tc := range []struct {
		name string
		e    resumeEntry
		want string
		bad  bool
	}{
		{"an option", resumeEntry{Status: "resolved", Payload: payload("nope", nil)}, "selected nope", false},
		{"approved", resumeEntry{Status: "resolved", Payload: payload("", &yes)}, "selected ok", false},
		{"not approved", resumeEntry{Status: "resolved", Payload: payload("", &no)}, "selected nope", false},
		{"cancelled", resumeEntry{Status: "cancelled"}, "cancelled", false},
		{"resolved with nothing", resumeEntry{Status: "resolved"}, "", true},
		{"another status", resumeEntry{Status: "maybe"}, "", true},
		{"an option not offered", resumeEntry{Status: "resolved", Payload: payload("x", nil)}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resumeOutcome(a, tc.e)
			if tc.bad != (err != nil) || (!tc.bad && outcomeText(got) != tc.want) {
				t.Errorf("got %q, %v; want %q (bad request: %v)", outcomeText(got), err, tc.want, tc.bad)
			}
		})
	}
}

func payload(optionID string, approved *bool) (p struct {
	OptionID string `json:"optionId"`
	Approved *bool  `json:"approved"`
}) {
	p.OptionID, p.Approved = optionID, approved
	return p
}

// A user UIMessage as a prompt: text, images from data URLs, links.
func TestPromptOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []uiPartIn
		want  []sdk.ContentBlock
		bad   bool
	}{
		{"text", []uiPartIn{{Type: "text", Text: "hi"}, {Type: "reasoning", Text: "x"}, {Type: "text", Text: ""}},
			[]sdk.ContentBlock{sdk.TextBlock("hi")}, false},
		{"an image", []uiPartIn{{Type: "file", MediaType: "image/png", URL: "data:image/png;base64,AAAA"}, {Type: "text", Text: "see"}},
			[]sdk.ContentBlock{sdk.ImageBlock("AAAA", "image/png"), sdk.TextBlock("see")}, false},
		{"a link", []uiPartIn{{Type: "file", MediaType: "application/pdf", URL: "https://x/a.pdf", Filename: "a.pdf"}},
			[]sdk.ContentBlock{{ResourceLink: &sdk.ContentBlockResourceLink{Type: "resource_link", Name: "a.pdf", Uri: "https://x/a.pdf", MimeType: ptrTo("application/pdf")}}}, false},
		{"nothing to send", []uiPartIn{{Type: "step-start"}}, nil, true},
		{"an image not in base64", []uiPartIn{{Type: "file", MediaType: "image/png", URL: "data:image/png,xx"}}, nil, true},
		{"a file without a url", []uiPartIn{{Type: "file", MediaType: "text/plain"}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := promptOf(uiMessageIn{ID: "u1", Role: "user", Parts: tc.parts})
			if tc.bad {
				if !errors.Is(err, errBadRequest) {
					t.Fatalf("err = %v, want a bad request", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// A session/load replay as UIMessages: a user message per prompt (text
// joined), the agent's work until the next one an assistant message.
func TestReplayMessages(t *testing.T) {
	read := sdk.ToolCallStatusCompleted
	us := []sdk.SessionUpdate{
		sdk.UpdateUserMessageText("Read "), sdk.UpdateUserMessageText("it"),
		sdk.UpdateAgentThoughtText("hmm"),
		{ToolCall: &sdk.SessionUpdateToolCall{ToolCallId: "t1", Title: "Read a", Kind: sdk.ToolKindRead, RawInput: map[string]any{"p": "a"}}},
		{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: "t1", Status: &read}},
		sdk.UpdateAgentMessageText("done"),
		{UsageUpdate: &sdk.SessionUsageUpdate{Used: 1, Size: 2}},
		sdk.UpdateUserMessageText("next"),
	}
	got := replayMessages("s1", us)
	var summary []string
	for _, m := range got {
		s := m.ID + " " + m.Role + ":"
		for _, p := range m.Parts {
			s += fmt.Sprintf(" %v", p["type"])
			if txt, ok := p["text"]; ok {
				s += fmt.Sprintf("(%v)", txt)
			}
			if st, ok := p["state"]; ok {
				s += fmt.Sprintf("[%v]", st)
			}
		}
		summary = append(summary, s)
	}
	want := []string{
		"h1 user: text(Read it)",
		"h2 assistant: reasoning(hmm)[done] dynamic-tool[output-available] text(done)[done]",
		"h3 user: text(next)",
	}
	if diff := cmp.Diff(want, summary); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Each error a web request can get has its HTTP status.
func TestStatusOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("x: %w", errBadRequest), http.StatusBadRequest},
		{fmt.Errorf("x: %w", errUnknownChat), http.StatusNotFound},
		{fmt.Errorf("x: %w", errNoAsk), http.StatusConflict},
		{errTurnRunning, http.StatusConflict},
		{&sdk.RequestError{Code: -32600, Message: "Invalid request: session busy: a turn runs"}, http.StatusConflict},
		{&sdk.RequestError{Code: -32602, Message: "Invalid params"}, http.StatusBadRequest},
		{errClosed, http.StatusServiceUnavailable},
		{context.Canceled, http.StatusServiceUnavailable},
		{errors.New("anything else"), http.StatusInternalServerError},
	} {
		if got := statusOf(tc.err); got != tc.want {
			t.Errorf("statusOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// lineSender sends each whole line written as one message, whatever the
// writes' boundaries, and refuses a line that is no message.
func TestLineSender(t *testing.T) {
	reg := core.NewRegistry(core.Limits{}, webLogger())
	got := make(chan string, 10)
	c := reg.NewConn(core.ConnOptions{})
	echo := func(ctx context.Context, r io.Reader, w io.Writer, agent string) error {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			got <- sc.Text()
		}
		return nil
	}
	if err := c.Start(echo); err != nil {
		t.Fatal(err)
	}
	defer func() { c.Close(nil); <-c.Done() }()
	s := &lineSender{c: c}
	for _, w := range []string{`{"jsonrpc":"2.0","method":"a"}` + "\n", `{"jsonrpc":"2.0",`, `"method":"b"}` + "\n" + `{"jsonrpc":"2.0","method":"c"}` + "\n"} {
		if n, err := s.Write([]byte(w)); err != nil || n != len(w) {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	for _, want := range []string{"a", "b", "c"} {
		if line := <-got; !strings.Contains(line, `"method":"`+want+`"`) {
			t.Errorf("sent %q, want method %s", line, want)
		}
	}
	if _, err := s.Write([]byte("not json\n")); err == nil {
		t.Error("a line that is no message was sent")
	}
}
