// Package core is the connection core of acpbridge serve's edges: one
// client connection (Conn) is a Connector serving it on in-memory pipes;
// the transport hands it the client's messages (Send, Call) and gets the
// agent side's through ConnOptions.Route, which queues them on Mailboxes
// without waiting. A Registry holds a server's connections, and the
// sessions each has attached, so that a session one connection attaches
// is detached from the others. Msg is a JSON-RPC message, parsed once.
//
// Where things are: conn.go, a connection (Limits, ConnOptions, Send,
// Call, WaitRoom, Close); output.go, the agent side's messages routed
// without waiting, and the stall watchdog; mailbox.go, the bounded queues
// of a connection's output, one receiver (Lease) each; registry.go, the
// connections and the sessions attached to each; msg.go, JSON-RPC
// messages.
//
// Lock order (a mutex may be held while taking those after it in its
// line, never the other way):
//
//	Conn.inMu (Send's writes) → Conn.mu
//	Conn.wmu (the agent side's writes) → Conn.mu
//	Conn.wmu → the transport's Route locks (acphttp's httpConn.mu,
//	    sandbox's sbServer.mu and eventLog.mu) → Conn.mu
//	Conn.wmu → Registry.mu
//	Conn.wmu → another Conn's Detached lock (httpConn.mu) → its Conn.mu
//
// Registry.mu and Conn.mu are leaves: nothing is taken under them (Get,
// CloseAll and attach take Registry.mu, let it go, then take each Conn's
// mu). Conn.mu also guards every Mailbox and Lease of its connection.
// Route and Detached run with Conn.wmu held and must not block (the web
// edges' Route writes to a synchronous pipe whose reader only queues).
package core
