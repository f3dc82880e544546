// Package agentkit is what every translator shares, so that a backend is
// its agent's wire format, its tool table and little else:
//
//   - Settings: a session's config options and their values.
//   - Turn: one prompt at a time, waiting for its end, interrupting it on
//     cancel and giving up after a grace period.
//   - Asks: the permission round trip, from the agent's ask to the client
//     and back, withdrawn when the turn is cancelled or the agent takes
//     the ask back.
//   - Lower: ACP prompt content (text, images, embedded and linked
//     resources) into what an agent takes, refusing what it can't with
//     an invalid-params error rather than dropping it.
//   - Tools: a per-agent table of tool names that says how each call is
//     shown (kind, title, locations, diffs), and the helpers for output.
//   - Executable: finding an agent's CLI, with the ACPBRIDGE_<AGENT>
//     override.
//
// It knows ACP's types and the bridge's Backend contract, and no agent.
package agentkit
