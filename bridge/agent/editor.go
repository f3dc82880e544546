package agent

import (
	"context"
	"encoding/json"

	"github.com/coder/acp-go-sdk"
)

// Editor is the client's side as an agent that speaks ACP itself calls
// it, beyond updates and permission asks (which go through Events): the
// client's file system and terminals, where the client offers them, and
// extension methods. A session's Editor names the bridge's session in
// every request, whatever session id the agent used, and answers
// method-not-found for what the client did not offer.
type Editor interface {
	Capabilities() acp.ClientCapabilities
	ClientMethods
	// CallExtension calls an extension method (its name starts with "_").
	CallExtension(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// NotifyExtension sends an extension notification: one the client
	// does not answer.
	NotifyExtension(ctx context.Context, method string, params json.RawMessage) error
}

// ClientMethods are the ACP client's file system and terminal methods, as
// an agent calls them through its Editor and the engine through the edge.
type ClientMethods interface {
	ReadTextFile(ctx context.Context, r acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error)
	WriteTextFile(ctx context.Context, r acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error)
	CreateTerminal(ctx context.Context, r acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error)
	TerminalOutput(ctx context.Context, r acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error)
	WaitForTerminalExit(ctx context.Context, r acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error)
	KillTerminal(ctx context.Context, r acp.KillTerminalRequest) (acp.KillTerminalResponse, error)
	ReleaseTerminal(ctx context.Context, r acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error)
}
