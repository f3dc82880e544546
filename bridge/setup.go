package bridge

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// Setup is what a session/new, load, resume or fork asks of a session
// beside its id: where it works, its MCP servers and its instructions.
type Setup struct {
	Cwd string
	// Directories are more workspace roots beside Cwd, absolute: the
	// complete list for the session (ACP's additionalDirectories; nil:
	// none, on a load or resume too).
	Directories []string
	MCP         []acp.McpServer
	// SystemPrompt is the client's instructions for the session. Nil on
	// a load, resume or fork keeps those the session has (ACP lets the
	// agent keep a system prompt it stored).
	SystemPrompt *agent.SystemPrompt
}

// check refuses a cwd or a directory that is not absolute, and a
// directory that is not there or not a directory, naming it.
func (st Setup) check() error {
	if err := checkCwd(st.Cwd); err != nil {
		return err
	}
	for _, d := range st.Directories {
		if err := checkDir(d); err != nil {
			return err
		}
	}
	return nil
}

func checkDir(d string) error {
	if !filepath.IsAbs(d) {
		return fmt.Errorf("%w: additionalDirectories: %q %s", agent.ErrInvalidParams, d, notAbs(d, runtime.GOOS))
	}
	fi, err := os.Stat(d)
	switch {
	case err != nil:
		return fmt.Errorf("%w: additionalDirectories: %v", agent.ErrInvalidParams, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: additionalDirectories: %s is not a directory", agent.ErrInvalidParams, d)
	}
	return nil
}

// options is the OpenOptions of a session set up as st, keeping kept
// (the session's system prompt, nil for a new session) when st has none.
func (st Setup) options(kept *agent.SystemPrompt) agent.OpenOptions {
	return agent.OpenOptions{Cwd: st.Cwd, Directories: slices.Clone(st.Directories), MCPServers: st.MCP,
		SystemPrompt: cmp.Or(st.SystemPrompt, kept)}
}

// takes refuses options the backend can't honour, naming the agent, so
// that a session never runs without what its client asked for.
func takes(info agent.Info, opts agent.OpenOptions) error {
	if len(opts.Directories) > 0 && !info.Caps.Directories {
		return fmt.Errorf("%w: agent %s takes no additional directories (additionalDirectories)", agent.ErrInvalidParams, info.Name)
	}
	if p := opts.SystemPrompt; p != nil && !info.Caps.SystemPrompt.Takes(*p) {
		return fmt.Errorf("%w: agent %s takes no system prompt in %s mode", agent.ErrInvalidParams, info.Name, promptMode(*p))
	}
	return nil
}

func promptMode(p agent.SystemPrompt) string {
	if p.Override {
		return string(acp.SystemPromptModeOverride)
	}
	return string(acp.SystemPromptModeAppend)
}

// recordedPrompt is a header's system prompt as the agent contract has it.
func recordedPrompt(h persist.Header) *agent.SystemPrompt {
	if h.SystemPrompt == nil {
		return nil
	}
	return &agent.SystemPrompt{Override: h.SystemPrompt.Mode == string(acp.SystemPromptModeOverride), Text: h.SystemPrompt.Text}
}

// recordPrompt is p as a header keeps it.
func recordPrompt(p *agent.SystemPrompt) *persist.SystemPrompt {
	if p == nil {
		return nil
	}
	return &persist.SystemPrompt{Mode: promptMode(*p), Text: p.Text}
}

// resetup has a live session work with st's directories and system
// prompt, which a load or resume may change: between turns, its agent is
// opened again on its native session with them (an agent stopped while
// idle takes them when it starts again).
func (s *Session) resetup(st Setup) error {
	s.mu.Lock()
	old, opts := s.native, s.reopening()
	s.mu.Unlock()
	next := opts
	next.Directories, next.SystemPrompt = slices.Clone(st.Directories), cmp.Or(st.SystemPrompt, opts.SystemPrompt)
	if slices.Equal(next.Directories, opts.Directories) && equalPrompt(next.SystemPrompt, opts.SystemPrompt) {
		return nil
	}
	if old == nil { // the agent takes them when it starts again; s.open checks them otherwise
		if err := takes(s.backend.Info(), next); err != nil {
			return err
		}
		s.mu.Lock()
		s.opts.Directories, s.opts.SystemPrompt = next.Directories, next.SystemPrompt
		s.header.Directories, s.header.SystemPrompt = next.Directories, recordPrompt(next.SystemPrompt)
		s.mu.Unlock()
		s.saveHeader()
		return nil
	}
	next.NativeID, next.Config = s.nativeID(), values(old.Config())
	if err := s.open(next); err != nil {
		return err
	}
	old.Close()
	s.saveHeader()
	return nil
}

func equalPrompt(a, b *agent.SystemPrompt) bool {
	return a == b || a != nil && b != nil && *a == *b
}
