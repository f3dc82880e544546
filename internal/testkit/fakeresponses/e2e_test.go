package fakeresponses

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// These tests drive the real `codex app-server` (see CodexBin) against
// the fake, to check that codex 0.169.0 accepts its streams and that the
// directives produce the thread items, plan updates, approval requests and
// history that the Codex backend translates.

func TestCodexRunAndPlan(t *testing.T) {
	t.Parallel()
	e := newCodexEnv(t, HomeOptions{})
	a := e.start(t)
	th, _ := a.startThread(map[string]any{"cwd": e.work, "approvalPolicy": "never", "sandbox": "danger-full-access"})

	tr := a.runTurn(th, "run: echo hi", nil)
	if tr.completed.Turn.Status != "completed" {
		t.Fatalf("turn %s:\n%s", tr.completed.Turn.Status, tr.dump())
	}
	cmd := tr.item(t, "commandExecution")
	if cmd.Status != "completed" || cmd.AggregatedOutput == nil || *cmd.AggregatedOutput != "hi\n" ||
		cmd.ExitCode == nil || *cmd.ExitCode != 0 || cmd.Command != "/bin/bash -lc 'echo hi'" || cmd.Cwd != e.work {
		t.Errorf("commandExecution %+v", cmd)
	}
	if got := tr.item(t, "agentMessage").Text; got != FinalTextPrefix+"hi" {
		t.Errorf("final text %q", got)
	}

	tr = a.runTurn(th, "todo", nil)
	m, ok := tr.find("turn/plan/updated")
	if !ok || tr.completed.Turn.Status != "completed" {
		t.Fatalf("no turn/plan/updated, or turn %s:\n%s", tr.completed.Turn.Status, tr.dump())
	}
	var plan struct {
		TurnID      string `json:"turnId"`
		Explanation string `json:"explanation"`
		Plan        []struct{ Step, Status string }
	}
	m.params(t, &plan)
	if plan.TurnID != tr.id || plan.Explanation != "fake plan" || len(plan.Plan) != 2 ||
		plan.Plan[0] != (struct{ Step, Status string }{"first step", "inProgress"}) ||
		plan.Plan[1] != (struct{ Step, Status string }{"second step", "pending"}) {
		t.Errorf("turn/plan/updated %s", m)
	}
	if got := tr.item(t, "agentMessage").Text; got != PlanUpdatedText {
		t.Errorf("final text %q", got)
	}

	// The wire: no "jsonrpc" from the server, emittedAtMs on notifications.
	for _, m := range a.all {
		if m.JSONRPC != nil {
			t.Errorf("server sent jsonrpc: %s", m)
		}
		if m.isNotification() && m.EmittedAtMs == nil {
			t.Errorf("notification without emittedAtMs: %s", m)
		}
	}
	// What codex sent the fake.
	reqs := e.fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	r := reqs[0]
	if r.Header.Get("Originator") != "acpbridge-test" || r.Header.Get("Authorization") != "Bearer dummy" || r.Model != Model {
		t.Errorf("request headers %v, model %q", r.Header, r.Model)
	}
	for _, tool := range []string{"exec_command", "apply_patch", "update_plan"} {
		if !r.HasTool(tool) {
			t.Errorf("tools %q lack %s", r.Tools, tool)
		}
	}
	if r.ToolType("apply_patch") != "custom" {
		t.Errorf("apply_patch is a %q tool", r.ToolType("apply_patch"))
	}
	if o := reqs[1].Outputs; len(o) != 1 || o[0].Name != "exec_command" || !strings.HasSuffix(o[0].Output, "Output:\nhi\n") {
		t.Errorf("outputs of the second request %+v", o)
	}
}

func TestCodexItems(t *testing.T) {
	t.Parallel()
	e := newCodexEnv(t, HomeOptions{})
	a := e.start(t)
	th, _ := a.startThread(map[string]any{"cwd": e.work, "approvalPolicy": "never", "sandbox": "danger-full-access"})

	t.Run("text", func(t *testing.T) {
		defer a.use(t)()
		tr := a.runTurn(th, "hello there", nil)
		msg := tr.item(t, "agentMessage")
		if tr.completed.Turn.Status != "completed" || msg.Text != AnswerTextPrefix+"hello there" {
			t.Fatalf("turn %s, text %q", tr.completed.Turn.Status, msg.Text)
		}
		var deltas []string
		for _, m := range tr.msgs {
			if m.Method == "item/agentMessage/delta" {
				var p struct{ ItemID, Delta string }
				m.params(t, &p)
				if p.ItemID != msg.ID {
					t.Errorf("delta for %s, message is %s", p.ItemID, msg.ID)
				}
				deltas = append(deltas, p.Delta)
			}
		}
		if len(deltas) < 2 || strings.Join(deltas, "") != msg.Text {
			t.Errorf("deltas %q", deltas)
		}
		if _, ok := tr.find("warning"); ok {
			t.Errorf("codex warned (is the model catalog missing?):\n%s", tr.dump())
		}
	})
	t.Run("think", func(t *testing.T) {
		defer a.use(t)()
		tr := a.runTurn(th, "think about it", nil)
		rs := tr.item(t, "reasoning")
		if !reflect.DeepEqual(rs.Summary, []string{ReasoningText}) {
			t.Errorf("reasoning %+v", rs)
		}
		if _, ok := tr.find("item/reasoning/summaryTextDelta"); !ok {
			t.Errorf("no summaryTextDelta:\n%s", tr.dump())
		}
		if got := tr.item(t, "agentMessage").Text; got != AnswerTextPrefix+"think about it" {
			t.Errorf("text %q", got)
		}
	})
	t.Run("patch and edit", func(t *testing.T) {
		defer a.use(t)()
		tr := a.runTurn(th, AddPrompt("hello.txt"), nil)
		fc := tr.item(t, "fileChange")
		var ch []struct {
			Path string `json:"path"`
			Kind struct {
				Type string `json:"type"`
			} `json:"kind"`
			Diff string `json:"diff"`
		}
		b, _ := json.Marshal(fc.Changes)
		_ = json.Unmarshal(b, &ch)
		if fc.Status != "completed" || len(ch) != 1 || ch[0].Path != filepath.Join(e.work, "hello.txt") || ch[0].Kind.Type != "add" || ch[0].Diff != AddedLine+"\n" {
			t.Errorf("fileChange %+v %s", fc, b)
		}
		if got, _ := os.ReadFile(filepath.Join(e.work, "hello.txt")); string(got) != AddedLine+"\n" {
			t.Errorf("hello.txt = %q", got)
		}
		if got := tr.item(t, "agentMessage").Text; got != PatchedText {
			t.Errorf("text %q", got)
		}
		tr = a.runTurn(th, EditPrompt("hello.txt"), nil)
		fc = tr.item(t, "fileChange")
		b, _ = json.Marshal(fc.Changes)
		if fc.Status != "completed" || !strings.Contains(string(b), `"type":"update"`) {
			t.Errorf("fileChange %s", b)
		}
		if got, _ := os.ReadFile(filepath.Join(e.work, "hello.txt")); string(got) != EditedLine+"\n" {
			t.Errorf("hello.txt = %q", got)
		}
	})
	t.Run("fail500", func(t *testing.T) {
		defer a.use(t)()
		tr := a.runTurn(th, "fail500", nil)
		m, ok := tr.find("error")
		if !ok || tr.completed.Turn.Status != "failed" {
			t.Fatalf("turn %s:\n%s", tr.completed.Turn.Status, tr.dump())
		}
		var p struct {
			Error struct {
				CodexErrorInfo any `json:"codexErrorInfo"`
			} `json:"error"`
			WillRetry bool `json:"willRetry"`
		}
		m.params(t, &p)
		if p.Error.CodexErrorInfo != "internalServerError" || p.WillRetry {
			t.Errorf("error %s", m)
		}
	})
	t.Run("slow and interrupt", func(t *testing.T) {
		defer a.use(t)()
		res := a.call("turn/start", map[string]any{"threadId": th,
			"input": []any{map[string]any{"type": "text", "text": "slow", "text_elements": []any{}}}})
		var r struct{ Turn struct{ ID string } }
		_ = json.Unmarshal(res, &r)
		a.until(method("item/agentMessage/delta"))
		a.call("turn/interrupt", map[string]any{"threadId": th, "turnId": r.Turn.ID})
		m, _ := a.until(method("turn/completed"))
		var done turnCompleted
		m.params(t, &done)
		if done.Turn.Status != "interrupted" {
			t.Errorf("turn/completed %s", m)
		}
		// codex dropped the stream; the fake's handler stops at its next delay.
		waitIdle(t, e.fake, time.Minute)
	})
}

func TestCodexApprovals(t *testing.T) {
	t.Parallel()
	e := newCodexEnv(t, HomeOptions{})
	a := e.start(t)
	th, _ := a.startThread(map[string]any{"cwd": e.work, "approvalPolicy": "untrusted", "sandbox": "danger-full-access"})

	type approval struct {
		Kind               string            `json:"kind"`
		ThreadID           string            `json:"threadId"`
		TurnID             string            `json:"turnId"`
		ItemID             string            `json:"itemId"`
		Command            string            `json:"command"`
		Cwd                string            `json:"cwd"`
		AvailableDecisions []json.RawMessage `json:"availableDecisions"`
	}
	nextID := 0
	run := func(t *testing.T, prompt, wantMethod, decision string) (turn, approval) {
		t.Helper()
		var req approval
		n := 0
		tr := a.runTurn(th, prompt, func(m rpcMsg) any {
			n++
			if m.Method != wantMethod || string(m.ID) != jsonNumber(nextID) {
				t.Errorf("server request %s, want %s with id %d", m, wantMethod, nextID)
			}
			nextID++
			m.params(t, &req)
			return map[string]any{"decision": decision}
		})
		if n != 1 {
			t.Fatalf("%d approval requests:\n%s", n, tr.dump())
		}
		if req.ThreadID != th || req.TurnID != tr.id || req.ItemID == "" {
			t.Errorf("approval request %+v", req)
		}
		if _, ok := tr.find("serverRequest/resolved"); !ok {
			t.Errorf("no serverRequest/resolved")
		}
		return tr, req
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(e.work, name))
		return err == nil
	}

	for _, tc := range []struct{ decision, status, turnStatus string }{
		{"accept", "completed", "completed"},
		{"decline", "declined", "completed"},
		{"cancel", "declined", "interrupted"},
	} {
		t.Run("command "+tc.decision, func(t *testing.T) {
			defer a.use(t)()
			dir := "made_" + tc.decision
			tr, req := run(t, "run: mkdir -p "+dir+" && echo made", "item/commandExecution/requestApproval", tc.decision)
			cmd := tr.item(t, "commandExecution")
			if req.Kind != "command" || req.ItemID != cmd.ID || req.Command != "/bin/bash -lc 'mkdir -p "+dir+" && echo made'" ||
				req.Cwd != e.work || len(req.AvailableDecisions) == 0 || string(req.AvailableDecisions[0]) != `"accept"` {
				t.Errorf("approval request %+v", req)
			}
			if cmd.Status != tc.status || tr.completed.Turn.Status != tc.turnStatus || exists(dir) != (tc.decision == "accept") {
				t.Errorf("item %s, turn %s, %s exists %v:\n%s", cmd.Status, tr.completed.Turn.Status, dir, exists(dir), tr.dump())
			}
			if tc.decision == "decline" && !strings.Contains(tr.item(t, "agentMessage").Text, "rejected by user") {
				t.Errorf("after decline the model got %q", tr.item(t, "agentMessage").Text)
			}
		})
	}
	for _, tc := range []struct{ decision, status, turnStatus string }{
		{"accept", "completed", "completed"},
		{"decline", "declined", "completed"},
		{"cancel", "", "interrupted"}, // no item/completed for the fileChange at all
	} {
		t.Run("patch "+tc.decision, func(t *testing.T) {
			defer a.use(t)()
			file := "p_" + tc.decision + ".txt"
			tr, req := run(t, AddPrompt(file), "item/fileChange/requestApproval", tc.decision)
			var started itemParams
			for _, m := range tr.msgs {
				if m.Method == "item/started" {
					if m.params(t, &started); started.Item.Type == "fileChange" {
						break
					}
				}
			}
			if started.Item.Type != "fileChange" || started.Item.ID != req.ItemID {
				t.Errorf("item/started %+v, approval for %s", started.Item, req.ItemID)
			}
			var status string
			for _, it := range tr.items(t) {
				if it.Type == "fileChange" {
					status = it.Status
				}
			}
			if status != tc.status || tr.completed.Turn.Status != tc.turnStatus || exists(file) != (tc.decision == "accept") {
				t.Errorf("item %q, turn %s, %s exists %v:\n%s", status, tr.completed.Turn.Status, file, exists(file), tr.dump())
			}
		})
	}
}

func jsonNumber(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestCodexResumeAndModels(t *testing.T) {
	t.Parallel()
	e := newCodexEnv(t, HomeOptions{})
	a := e.start(t)
	th, _ := a.startThread(map[string]any{"cwd": e.work, "approvalPolicy": "never", "sandbox": "danger-full-access"})
	a.runTurn(th, "run: echo hi", nil)
	a.close()

	b := e.start(t)
	res := b.call("thread/resume", map[string]any{"threadId": th})
	var r struct {
		Thread struct {
			ID    string `json:"id"`
			Turns []struct {
				ID        string      `json:"id"`
				Status    string      `json:"status"`
				ItemsView string      `json:"itemsView"`
				Items     []codexItem `json:"items"`
			} `json:"turns"`
		} `json:"thread"`
		ApprovalPolicy string `json:"approvalPolicy"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	if r.Thread.ID != th || len(r.Thread.Turns) != 1 || r.Thread.Turns[0].Status != "completed" || r.Thread.Turns[0].ItemsView != "full" {
		t.Fatalf("thread/resume %.2000s", res)
	}
	var types []string
	for _, it := range r.Thread.Turns[0].Items {
		types = append(types, it.Type)
		if it.Type == "commandExecution" && (it.AggregatedOutput == nil || *it.AggregatedOutput != "hi\n") {
			t.Errorf("resumed commandExecution %+v", it)
		}
	}
	if want := []string{"userMessage", "agentMessage", "commandExecution", "agentMessage"}; !reflect.DeepEqual(types, want) {
		t.Errorf("resumed items %q, want %q", types, want)
	}
	// The next turn sends the whole history.
	tr := b.runTurn(th, "hello again", nil)
	if got := tr.item(t, "agentMessage").Text; got != AnswerTextPrefix+"hello again" {
		t.Errorf("text after resume %q", got)
	}

	res = b.call("model/list", map[string]any{})
	var ml struct {
		Data []struct {
			ID                        string `json:"id"`
			DisplayName               string `json:"displayName"`
			IsDefault                 bool   `json:"isDefault"`
			DefaultReasoningEffort    string `json:"defaultReasoningEffort"`
			SupportedReasoningEfforts []struct {
				ReasoningEffort string `json:"reasoningEffort"`
			} `json:"supportedReasoningEfforts"`
		} `json:"data"`
	}
	if err := json.Unmarshal(res, &ml); err != nil {
		t.Fatal(err)
	}
	var efforts []string
	if len(ml.Data) == 1 {
		for _, e := range ml.Data[0].SupportedReasoningEfforts {
			efforts = append(efforts, e.ReasoningEffort)
		}
	}
	if len(ml.Data) != 1 || ml.Data[0].ID != Model || ml.Data[0].DisplayName != "Fake Model" || !ml.Data[0].IsDefault ||
		ml.Data[0].DefaultReasoningEffort != "medium" || !reflect.DeepEqual(efforts, []string{"low", "medium", "high", "xhigh"}) {
		t.Errorf("model/list %s", res)
	}
}

// With no approval_policy or sandbox_mode in config.toml and none in
// thread/start, codex's own defaults apply; with them in config.toml,
// those apply.
func TestCodexConfigPolicy(t *testing.T) {
	t.Parallel()
	type policy struct {
		ApprovalPolicy any `json:"approvalPolicy"`
		Sandbox        struct {
			Type string `json:"type"`
		} `json:"sandbox"`
	}
	for _, tc := range []struct {
		opts    HomeOptions
		approve string
		sandbox string
	}{
		{HomeOptions{}, "on-request", "readOnly"},
		{HomeOptions{ApprovalPolicy: "never", SandboxMode: "danger-full-access"}, "never", "dangerFullAccess"},
		{HomeOptions{ApprovalPolicy: "on-request", SandboxMode: "workspace-write"}, "on-request", "workspaceWrite"},
	} {
		e := newCodexEnv(t, tc.opts)
		a := e.start(t)
		_, res := a.startThread(map[string]any{"cwd": e.work})
		var p policy
		if err := json.Unmarshal(res, &p); err != nil {
			t.Fatal(err)
		}
		if p.ApprovalPolicy != tc.approve || p.Sandbox.Type != tc.sandbox {
			t.Errorf("%+v: thread/start gave approvalPolicy %v, sandbox %s; want %s, %s", tc.opts, p.ApprovalPolicy, p.Sandbox.Type, tc.approve, tc.sandbox)
		}
		a.close()
	}
}

// codex 0.169.0 refuses approval_policy = "untrusted" in config.toml (it
// exits at start-up), though thread/start and turn/start still take
// approvalPolicy "untrusted".
func TestCodexConfigUntrustedRejected(t *testing.T) {
	t.Parallel()
	e := newCodexEnv(t, HomeOptions{ApprovalPolicy: "untrusted"})
	cmd := exec.Command(e.bin, "app-server")
	cmd.Dir = e.work
	cmd.Env = Env(e.home, e.codexHome)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `approval_policy = "untrusted" is no longer supported`) {
		t.Errorf("codex app-server with approval_policy = \"untrusted\": %v\n%s", err, out)
	}
}
