// Package amp drives the Amp CLI (`amp`): one process per turn in
// stream-json mode, the thread it works on named by Amp's thread id.
// Translator turns its output into ACP updates; the session owns the
// processes; permission.go is how Amp's permission asks reach the editor.
//
// What the code relies on, as observed with @ampcode/cli
// 0.0.1790142911-g7618fb:
//
//   - Amp runs its model loop on Amp's servers (the CLI only runs tools),
//     so it needs the network and a key, and can't be pointed at a fake
//     model: the tests use a fake amp.
//   - A turn is `amp [threads continue T-…] --execute --stream-json
//     --stream-json-input --stream-json-thinking --no-archive-after-execute`
//     with the prompt as one JSON line on stdin ({"type":"user","message":
//     {"role":"user","content":[…]}}, at most four images, each of the
//     type it claims). With --stream-json-input amp prints its result only
//     once stdin has ended and the turn is done, so the bridge closes stdin
//     after the prompt. Without a thread, amp makes one; system/init tells
//     its id (T-<uuid>), which later turns continue.
//   - Output lines are Claude-Code-like but whole: one assistant line per
//     message with all its blocks (no deltas, so text arrives a message at
//     a time), its stop_reason and usage (no cost). The prompt is echoed
//     as a user line; tool results come as user lines whose content is a
//     string (the JSON of the result when it is not a string). A result
//     line ends the turn: success, or error_during_execution with an error
//     string ("User cancelled (SIGINT/SIGTERM)", "The following tools
//     require user approval…"), or error_max_turns.
//   - With no AMP_API_KEY and no key stored by `amp login`
//     ($XDG_DATA_HOME/amp/secrets.json, "apiKey@<server URL>"), amp prints
//     "No API key found. Starting login flow..." on stdout and waits five
//     minutes for a code on stdin. The bridge checks for a key before it
//     starts amp and answers auth_required; should amp start the login
//     anyway, the bridge kills it at that line.
//   - Offline, amp exits 1 with "Couldn't connect to the Amp server" or
//     "Cannot reach Amp servers" on stderr. AMP_SKIP_UPDATE_CHECK=1 turns
//     off its self-update.
//   - SIGINT makes amp end the turn with the "User cancelled" result.
//   - --settings-file replaces the user's settings file, so the bridge's
//     carries the user's settings over. Amp's permission rules are first
//     match, the user's before the built-in ones; in stream-json mode an
//     "ask" fails the run, and "delegate" runs a program (see
//     permission.go). --dangerously-allow-all (hidden from --help) allows
//     every tool.
//   - --mcp-config takes {"name": {command, args, env} or {url, headers}}.
//   - Amp's threads live on its servers; the bridge's transcript is what
//     session/load replays.
package amp
