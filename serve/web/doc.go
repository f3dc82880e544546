// Package web is what acpbridge serve's two web edges share, the AI SDK's
// chat (serve/aisdk) and AG-UI (serve/agui): each is an ACP client of the
// connection core like any editor, and each conversation of a web client
// (a chat of useChat, a thread of AG-UI) is bound to one bridge session.
// A turn streams through the protocol's Translator into segments, each
// the body of one HTTP response: a turn that waits on a permission ask
// ends its segment with the ask, and the request that answers it streams
// the next.
//
// The layout:
//
//   - conn.go: the peer, the in-process ACP connections of one edge (one
//     per agent) and the sessions opened on them (and their subagents'
//     ids, routed to them); the ACP client it is (no fs, no terminal;
//     permission asks wait for the web client).
//   - link.go: how a connection reaches the Connector (pipes, or a Conn of
//     the core's Registry, as every other client connection of the
//     server).
//   - session.go: a Session's turn, its ordered queue of updates, asks and
//     end, and the Asks waiting for the web client's answer.
//   - chat.go: Chats and Chat, the client's ids (at most MaxChatID bytes)
//     bound to sessions, opened, created or replayed; the errors a web
//     request may get and their HTTP status (StatusOf); the JSON answers.
//   - store.go: the map of chats kept in the state directory, a file per
//     chat (ChatFileName).
//   - turn.go: the pump that streams a turn through a Translator into
//     Segments, SSE-encoded; Serve and ServeStream, a request that streams
//     one.
//   - tool.go: Tool, the one model of a tool call both translators keep
//     (its updates folded with agent.FoldToolCall), Span (a text or
//     thought streamed as one piece), how an ask is answered (OutcomeOf),
//     and the history a new session is told (TellHistory).
//   - notice.go: notices and compactions, which the web connections take
//     as they are (NoticeOf, Compactions).
//   - subagent.go: subagents, which they take too: a child session's
//     updates and asks routed to its parent's Session (Update.Child,
//     Ask.Child) and folded into its state so far (Subagents,
//     SubagentData), which both protocols send whole under its tool call.
//
// Lock order (a mutex may be held while taking those after it in its
// line): Chat.op (a request's set-up) → Chat.mu → Session.mu → queue.mu;
// Chat.op → Chats.mu, peer.mu, chatStore.mu, each a leaf; Ask.mu and
// Segment.mu are leaves.
package web
