// Package opencode drives OpenCode through one shared `opencode serve` per
// bridge: HTTP calls for sessions, prompts, aborts and permission replies,
// and one server-sent event stream per directory for everything that
// happens during a turn. Translator turns a session's events into ACP
// updates.
//
// What the code relies on, as observed with OpenCode 1.18.33:
//
//   - `opencode serve --port 0 --hostname 127.0.0.1` does not pick a free
//     port (it took 4096): the URL comes from the stdout line "opencode
//     server listening on http://…". It listens before it is ready, so the
//     bridge polls GET /global/health until it says {"healthy":true}.
//   - Without OPENCODE_SERVER_PASSWORD the server is an unauthenticated
//     endpoint that runs commands as the user; with it, every call needs
//     HTTP basic authentication (user "opencode"). The bridge sets a fresh
//     random password for each server it starts.
//   - Every call carries ?directory=<absolute path>, which selects the
//     project instance; the first call for a directory bootstraps it
//     (about a second).
//   - GET /event?directory=… streams `data: {id,type,properties}` events
//     (no event: or id: fields), server.connected first; unknown types
//     (server.heartbeat) are ignored. The stream must be connected before
//     a prompt, or the prompt's first events are lost.
//   - GET /command lists the commands of a directory ({name, description,
//     source: command|skill, template, hints}); POST /session/{id}/command
//     {command, arguments, agent, model: "provider/model", variant} runs
//     one and answers only when its turn is over, which streams on the
//     event stream like a prompt's.
//   - POST /session creates a session; its permission rules decide what
//     is asked: OpenCode allows everything unless a rule says "ask".
//     POST /session/{id}/prompt_async {parts, agent, model, variant}
//     answers 204 at once; the turn's events follow, and session.idle
//     ends it. After an abort (POST /session/{id}/abort) session.idle
//     comes twice, and a failed turn also repeats it.
//   - POST /session/{id}/fork {messageID?} copies a session's messages
//     (all of them without messageID) into a new session, leaving the
//     parent as it was. The fork lives in the parent's directory whatever
//     ?directory= says, and does not inherit the parent's permission
//     rules: the bridge sets them again with PATCH /session/{id}
//     {permission}. For a session/fork into another directory, or of a
//     session OpenCode no longer has (404), the bridge creates a new
//     session and tells it the conversation with its first prompt.
//   - permission.asked is answered with POST /permission/{id}/reply
//     {reply: once|always|reject}; a reject ends the turn. question.asked
//     with POST /question/{id}/reply {answers: [[label]…]} or
//     POST /question/{id}/reject.
//   - Text and reasoning stream as message.part.delta; message.part.updated
//     carries a part's whole state each time it changes (a tool part's
//     running output in state.metadata.output). The user's own message is
//     echoed and is skipped.
//   - The task tool {description, prompt, subagent_type} runs a subagent
//     in a child session: session.created names its parentID (the
//     caller's session) and title "<description> (@<type> subagent)";
//     the task part's state.metadata.sessionId names the child once it
//     runs, before the child's prompt; the child's events come on the
//     same event stream under its sessionID (its prompt as a user
//     message, its permission.asked too), and its session.idle comes
//     before the task part completes. The child's permission rules are
//     its own (task denied), not its parent's: the rules that ask must be
//     in the config, for every agent (OPENCODE_CONFIG_CONTENT's
//     permission). Aborting the parent aborts a running child; aborting
//     a child (POST /session/{child}/abort) fails the task ("Task
//     cancelled") and the parent goes on. An abort before the child is
//     busy is lost (its prompt then runs), and one just as it starts ends
//     it idle without an error.
//   - Modes are the primary agents of GET /agent (build, plan); models and
//     their variants (efforts) come from GET /config/providers, the
//     configured model from GET /config. All go with each prompt.
//   - MCP servers are added to a directory's instance with POST /mcp
//     {name, config: {type: local|remote, …}}.
//   - SIGTERM to the server's process group stops it in about half a
//     second; its sessions stay on disk (SQLite) and can be resumed.
package opencode
