package opencode

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
)

// A shared server (Options.Shared): one `opencode serve` per user and
// configuration, kept by proc's daemon keeper and used by every bridge at
// once, as OpenCode's own TUI and web clients share one. The bridge that
// starts it gives it a fresh password; the others read it, and the URL
// the server printed, from the daemon's directory (its own, mode 0700).
// Each bridge reads the event streams of its directories and routes what
// belongs to its own sessions, as with a server of its own.

// attend takes a lease on the shared opencode serve, starting it if need
// be, and returns where it listens and its password.
func (b *Backend) attend(ctx context.Context, path string, args, env []string) (agentkit.Link, *url.URL, string, error) {
	password, err := randomPassword()
	if err != nil {
		return nil, nil, "", err
	}
	spec := b.DaemonSpec(path, serveArgs(args), env, agentkit.Contents(configFiles(env)...))
	spec.Env = append(env, passwordEnv+"="+password) // not in the key: each start has its own
	var base *url.URL
	ready := func(dir string) (err error) {
		base, password, err = served(ctx, dir)
		return err
	}
	lease, err := daemon.Attend(ctx, spec, ready)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%w: %v", agent.ErrAgentUnavailable, err)
	}
	l := agentkit.NewLeased("opencode serve", lease, nil)
	l.EndWith(lease.Watch())
	return l, base, password, nil
}

// configFiles are OpenCode's global config files, by the environment
// env: $OPENCODE_CONFIG, and opencode.json, opencode.jsonc and
// config.json in $XDG_CONFIG_HOME/opencode (else ~/.config/opencode).
// A shared server reads them once, at its start.
func configFiles(env []string) []string {
	dir := agentkit.EnvValue(env, "XDG_CONFIG_HOME")
	if dir == "" {
		dir = filepath.Join(agentkit.HomeOf(env), ".config")
	}
	dir = filepath.Join(dir, "opencode")
	files := []string{filepath.Join(dir, "opencode.json"), filepath.Join(dir, "opencode.jsonc"), filepath.Join(dir, "config.json")}
	if f := agentkit.EnvValue(env, "OPENCODE_CONFIG"); f != "" {
		files = append(files, f)
	}
	return files
}

// served returns where the daemon in dir listens and its password, once
// it answers its health check.
func served(ctx context.Context, dir string) (*url.URL, string, error) {
	m := listening().FindSubmatch(daemon.Output(dir))
	if m == nil {
		return nil, "", errors.New("opencode serve has not said where it listens")
	}
	base, err := url.Parse(string(m[1]))
	if err != nil {
		return nil, "", err
	}
	password := agentkit.EnvValue(daemon.Env(dir), passwordEnv)
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.JoinPath("/global/health").String(), nil)
	if err != nil {
		return nil, "", err
	}
	req.SetBasicAuth(authUser, password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("opencode serve's health: %s", resp.Status)
	}
	return base, password, nil
}
