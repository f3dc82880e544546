// Package acpagent puts an agent that speaks ACP itself (Zed's
// claude-agent-acp and codex-acp, `opencode acp`, `qwen --acp`, Gemini
// CLI …) behind the bridge: the bridge is its client, and adds what the
// agent may lack — its own transcript, replayed by session/load; one
// session/list across every agent; the per-session agent option; a new
// process and the session reopened after a crash.
//
// One downstream process serves all of a backend's sessions, as ACP
// allows. Both ways, ACP passes through: updates (recorded on the way),
// permission asks, the editor's fs/* and terminal/* (only where the editor
// offered them; the downstream is told the editor's capabilities at its
// initialize), extension methods, config options and modes, cancel.
//
// A reopened session is loaded on the downstream where it can load, with
// its replay hidden (the bridge replays its own transcript, so the editor
// sees no duplicates); else resumed; else a new downstream session is
// started and the conversation so far, from the bridge's transcript, goes
// before the next prompt. The load answer's _meta.acpbridge says which.
//
// A raw layer reads the downstream's output before the SDK does (raw.go):
// an update of a kind acpbridge does not handle (a newer agent's, or one
// acp-go-sdk knows and acpbridge does not yet, as notice) passes to the
// editor and the transcript as it came, instead of being decoded as
// another kind, and so does one of a kind it handles that has a field the
// SDK's types would drop (the options and mode updates, which the session
// reads, excepted); an extension notification reaches the editor as a
// notification. Other updates go through the SDK's types. The editor's extension
// methods about a session go to the downstream (SessionCaps.Extension),
// requests as requests and notifications as notifications.
package acpagent
