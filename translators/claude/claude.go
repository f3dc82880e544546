// Package claude drives the Claude Code CLI: one long-lived `claude`
// process per session in stream-json mode, both ways, with the stdio
// control protocol for permissions, interrupts, modes, models and effort.
// Translator turns its output into ACP updates; the session owns the
// process and the control protocol.
//
// What the code relies on, as observed with Claude Code 2.1.197:
//
//   - The command line is what the official SDKs pass: --output-format
//     stream-json --verbose --input-format stream-json
//     --include-partial-messages --permission-prompt-tool stdio. While its
//     stdin is open the CLI never exits on its own; closing it after the
//     last result makes it exit.
//   - Control requests go both ways as {"type":"control_request",
//     "request_id","request":{"subtype",...}} and are answered with
//     control_response. The host sends initialize (answered 0.5–0.9 s
//     after spawn with the slash commands and models), interrupt,
//     set_permission_mode, set_model and apply_flag_settings; the CLI
//     sends can_use_tool (only with --permission-prompt-tool stdio) and
//     control_cancel_request when it no longer wants an answer.
//   - --resume replays nothing; a --resume of a session the CLI no longer
//     has prints "No conversation found" on stderr.
//   - bypassPermissions can be switched to only if the CLI was started
//     with --allow-dangerously-skip-permissions, and as root only with
//     IS_SANDBOX=1 or CLAUDE_CODE_BUBBLEWRAP set (see bypassAllowed); else
//     it refuses to start at all.
//   - --effort takes low, medium, high, xhigh or max; the effortLevel
//     flag setting (apply_flag_settings) low to xhigh, or null for the
//     default.
//   - A subagent (the Agent tool) is announced by system/task_started
//     {task_id, tool_use_id, description, subagent_type}; its own lines
//     carry parent_tool_use_id = that tool_use id (its prompt as a user
//     line; its text and thinking as assistant lines, not streamed, only
//     with initialize's forwardSubagentText); its can_use_tool asks carry
//     agent_id = the task id; task_updated {patch.status} and
//     task_notification {status} say it ended, before the Agent
//     tool_result; control stop_task {task_id} stops it alone (the Agent
//     tool_result is then an error, and the turn goes on). See
//     subagents.go.
//
// And as observed with 2.1.332, the newest on 2026-11-25 (scripts/test.sh
// --latest):
//
//   - The task tools are offered only with CLAUDE_CODE_ENABLE_TODO_TOOLS
//     (see envDefaults), and then deferred behind ToolSearch, as are
//     ExitPlanMode, EnterPlanMode, NotebookEdit, WebFetch, WebSearch,
//     Monitor, the Cron and worktree tools, SendMessage and TaskStop; new
//     are ListAgents, ReportFindings, ScheduleWakeup, ToolSearch and
//     Workflow (see tools).
//   - ExitPlanMode drops the plan the model passes and asks with the plan
//     file's text instead (input {plan, planFilePath}), or with {} when
//     the model wrote none.
package claude

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// EnvVar overrides where the claude executable is.
const EnvVar = "ACPBRIDGE_CLAUDE"

// Options configures the backend; ExtraArgs go after the arguments the bridge passes.
type Options = agentkit.Options

// Backend runs Claude Code sessions.
type Backend struct {
	agentkit.CLI

	mu     sync.Mutex
	models []agent.ConfigValue // as the last CLI to start told them, for the next session's first paint

	spare  agentkit.Spare[*proc.Process] // started by Warm, by its proc.Spec.Kind
	shared agentkit.SharedSpares         // instead, with Options.Shared

	bypassRefused atomic.Bool // the CLI refused to start able to bypass permissions
}

// spareTTL is how long a spare claude waits for a session to take it:
// clients send session/new right after initialize, and an idle claude
// holds a few hundred MB.
const spareTTL = time.Minute

var _ agent.Backend = (*Backend)(nil)

// New returns the Claude backend.
func New(opts Options) *Backend {
	b := &Backend{CLI: agentkit.NewCLI("claude", EnvVar, opts)}
	b.shared.For(b.CLI)
	return b
}

// Info: Claude takes images and embedded context; its resume replays
// nothing, so the bridge keeps the transcript.
// It forks: Claude forks a session with --resume ID --fork-session; the new
// session's id comes with its first turn's init.
func (b *Backend) Info() agent.Info {
	info := b.Describe("Claude Code", acp.McpCapabilities{Http: true, Sse: true}, b)
	info.Caps.Forks = true
	info.Caps.Directories = true                                             // --add-dir
	info.Caps.SystemPrompt = agent.PromptModes{Append: true, Override: true} // --append-system-prompt, --system-prompt
	info.Caps.Warm = b.Warm
	return info
}

// Open starts (or resumes) a session and warms its process up in the
// background, so that the first prompt doesn't pay the whole cold start.
func (b *Backend) Open(ctx context.Context, opts agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	path, err := b.Find()
	if err != nil {
		return nil, err
	}
	mcp, err := mcpConfig(opts.MCPServers)
	if err != nil {
		return nil, err
	}
	s := newSession(ctx, b, path, mcp, opts, ev)
	s.warm()
	return s, nil
}

// knownModels returns the models the last CLI told, if any did.
func (b *Backend) knownModels() []agent.ConfigValue {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.models
}

func (b *Backend) learnModels(models []agent.ConfigValue) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.models = models
}

// Warm starts a spare claude in the bridge's directory, as a new session
// there with no options of its own starts one; the first such session/new
// takes it, so its first turn skips most of Claude's start-up. Claude
// makes its session when the first prompt comes, so the spare is
// anyone's until then. With Options.Shared, the spare is kept by a daemon
// that the user's bridges share, and is there before the bridge starts
// when an earlier bridge left one.
func (b *Backend) Warm(dir string) {
	path, err := b.Find()
	if err != nil || dir == "" {
		return
	}
	spec := b.spec(path, dir, b.newLaunch(newSettings(b), "", ""))
	if b.Shared() != 0 {
		b.shared.Warm(spec, b.warmHere)
		return
	}
	b.warmHere(spec)
}

// warmHere starts a spare claude as spec in the bridge itself.
func (b *Backend) warmHere(spec proc.Spec) {
	b.spare.Make(spec.Kind(), spareTTL, func() (*proc.Process, error) { return proc.Start(spec) }, (*proc.Process).Stop)
}

// spec is how a claude at path is started in dir for launch l. Its Tag
// is what its settings files hold: a spare started before they changed
// is not taken.
func (b *Backend) spec(path, dir string, l launch) proc.Spec {
	env := b.env()
	return proc.Spec{Path: path, Args: b.args(l), Dir: dir, Env: env, Tag: agentkit.Contents(settingsFiles(env, dir)...)}
}

// settingsFiles are the files a claude started in dir with env reads at
// its start and that change what it does: the user's, the project's and
// the managed settings, the project's MCP servers, and the memory files.
func settingsFiles(env []string, dir string) []string {
	user := configDir(env)
	files := []string{filepath.Join(user, "settings.json"), filepath.Join(user, "settings.local.json"), filepath.Join(user, "CLAUDE.md"),
		filepath.Join(dir, ".claude", "settings.json"), filepath.Join(dir, ".claude", "settings.local.json"),
		filepath.Join(dir, ".mcp.json"), filepath.Join(dir, "CLAUDE.md"), filepath.Join(dir, "CLAUDE.local.md")}
	return append(files, managedSettings()...)
}

// managedSettings are the settings an administrator puts where Claude
// Code looks for them on this system.
func managedSettings() []string {
	switch runtime.GOOS {
	case "darwin":
		return []string{"/Library/Application Support/ClaudeCode/managed-settings.json"}
	case "windows":
		return []string{`C:\Program Files\ClaudeCode\managed-settings.json`}
	}
	return []string{"/etc/claude-code/managed-settings.json"}
}

// configDir is where claude keeps its settings and login, by the
// environment env: $CLAUDE_CONFIG_DIR, else ~/.claude.
func configDir(env []string) string {
	if dir := agentkit.EnvValue(env, "CLAUDE_CONFIG_DIR"); dir != "" {
		return dir
	}
	return filepath.Join(agentkit.HomeOf(env), ".claude")
}

// takeSpare returns the spare claude if it was started as spec, and is
// still running.
func (b *Backend) takeSpare(ctx context.Context, spec proc.Spec) *proc.Process {
	if b.Shared() != 0 {
		if p := b.shared.Take(ctx, spec); p != nil {
			return p
		}
	}
	p, ok := b.spare.Take(ctx, spec.Kind())
	if !ok {
		return nil
	}
	select {
	case <-p.Done():
		return nil
	default:
		return p
	}
}

// Close stops the spare claude, if no session took it; sessions own their
// processes.
func (b *Backend) Close() error {
	b.spare.Close()
	b.shared.Close()
	return nil
}

// launch is what a CLI starts with.
type launch struct {
	mode, model, effort string
	resume, mcp         string
	fork                bool // resume as a new session (--fork-session)
	bypass              bool // bypassPermissions is offered
	dirs                []string
	prompt              *agent.SystemPrompt
}

// newLaunch is how a session with settings cfg starts its CLI, resuming
// native session resume ("" for none) with MCP config mcp.
func (b *Backend) newLaunch(cfg *agentkit.Settings, resume, mcp string) launch {
	return launch{mode: cfg.Get(agent.ConfigMode), model: cfg.Get(agent.ConfigModel), effort: cfg.Get(agent.ConfigEffort),
		resume: resume, mcp: mcp, bypass: b.bypass()}
}

// bypass says whether the CLI is started able to bypass permissions: as
// its own rule allows, unless it refused to start so once already.
func (b *Backend) bypass() bool {
	return !b.bypassRefused.Load() && bypassAllowed(os.Geteuid() == 0, b.env())
}

// bypassRefusal is what the CLI prints when it refuses to start with
// --allow-dangerously-skip-permissions.
const bypassRefusal = "cannot be used with root/sudo privileges"

// refuseBypass stops offering bypassPermissions once the CLI refused to
// start with it, saying why the first time.
func (b *Backend) refuseBypass() {
	if !b.bypassRefused.Swap(true) {
		b.Log().Warn("claude refused to start able to bypass permissions (" + bypassRefusal +
			"); starting it without, and bypassPermissions is no longer offered (as root, set IS_SANDBOX=1 to have it)")
	}
}

// args is the CLI's command line: what the official SDKs pass.
func (b *Backend) args(l launch) []string {
	args := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
		"--include-partial-messages", "--permission-prompt-tool", "stdio"}
	if l.bypass {
		args = append(args, "--allow-dangerously-skip-permissions")
	}
	if l.mode != "" {
		args = append(args, "--permission-mode", l.mode)
	}
	if l.model != "" && l.model != "default" {
		args = append(args, "--model", l.model)
	}
	if l.effort != "" && l.effort != agentkit.EffortDefault {
		args = append(args, "--effort", l.effort)
	}
	resume, mcp := l.resume, l.mcp
	if resume != "" {
		args = append(args, "--resume", resume)
	}
	if resume != "" && l.fork {
		args = append(args, "--fork-session")
	}
	if mcp != "" {
		args = append(args, "--mcp-config", mcp)
	}
	for _, d := range l.dirs {
		args = append(args, "--add-dir", d)
	}
	switch p := l.prompt; {
	case p == nil:
	case p.Override:
		args = append(args, "--system-prompt", p.Text)
	default:
		args = append(args, "--append-system-prompt", p.Text)
	}
	return b.Args(args...)
}

// env is the bridge's environment without CLAUDECODE (set inside Claude
// Code itself, it would make the CLI think it is nested), plus Options.Env,
// after the defaults they may override (the last of a name wins).
func (b *Backend) env() []string { return append(slices.Clone(envDefaults), b.Env("CLAUDECODE")...) }

// envDefaults is what the bridge sets in Claude's environment unless the
// environment says otherwise. CLAUDE_CODE_ENABLE_TODO_TOOLS=1 keeps the
// task tools (TaskCreate, TaskUpdate, …), which the bridge shows as the
// plan: since about 2.1.3xx Claude offers them only to older models (up
// to claude-opus-4-7 and claude-sonnet-4-6) unless asked, so with its
// default model (claude-opus-5-5 in 2.1.332) no plan would ever appear.
// It offers them deferred behind ToolSearch then; the model may call them
// at once all the same.
var envDefaults = []string{"CLAUDE_CODE_ENABLE_TODO_TOOLS=1"}

// mcpConfig turns ACP's MCP servers into --mcp-config JSON.
func mcpConfig(servers []acp.McpServer) (string, error) {
	ms, err := agentkit.MCPServers("claude", servers, agentkit.MCPStdio, agentkit.MCPHTTP, agentkit.MCPSSE)
	if err != nil || len(ms) == 0 {
		return "", err
	}
	cfg := map[string]any{}
	for _, m := range ms {
		f := m.Fields("headers")
		f["type"] = m.Transport
		cfg[m.Name] = f
	}
	b, err := json.Marshal(map[string]any{"mcpServers": cfg})
	return string(b), err
}

// LoginCmd is Claude Code's own login, `claude auth login`.
func (b *Backend) LoginCmd() (*exec.Cmd, error) { return b.Command(b.env(), "auth", "login") }

// LogoutCmd is claude's own logout, which needs no terminal.
func (b *Backend) LogoutCmd() (*exec.Cmd, error) { return b.Command(b.env(), "auth", "logout") }

// Login tells whether Claude Code has credentials: an API key or token in
// its environment, or the login `claude` keeps in its config directory.
func (b *Backend) Login() agent.Login {
	env := b.env()
	return agentkit.LoginFrom(env, []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"},
		[]string{filepath.Join(configDir(env), ".credentials.json")},
		"run `acpbridge --agent claude --login` (or `claude auth login`), or set ANTHROPIC_API_KEY (a login in the macOS keychain can't be seen from here)")
}
