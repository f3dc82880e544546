package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/acpbridge/acpbridge/internal/testkit/fakemessages"
	"github.com/acpbridge/acpbridge/scripts/internal/benchkit"
)

// RunOnce runs server s once, its fake API requests under prefix, and
// returns its measurements.
func (b *bench) RunOnce(s server, prefix string) (res benchkit.Result) {
	dirs, cleanup, err := benchkit.MakeDirs(os.Stderr, "benchsandbox-"+s.Name+"-", s.Name+prefix, b.o.Keep, ".claude")
	if err != nil {
		return benchkit.Result{Err: err}
	}
	defer cleanup()
	port, err := freePort()
	if err != nil {
		return benchkit.Result{Err: err}
	}
	argv, env, err := b.command(s, dirs, prefix, port)
	if err != nil {
		return benchkit.Result{Err: err}
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	d, err := b.driver.start(base, "claude", s.Name+prefix, b.o.Verbose)
	if err != nil {
		return benchkit.Result{Err: err}
	}
	defer d.stop()
	p, err := dirs.Start(argv, env, b.claudeReal)
	if err != nil {
		return benchkit.Result{Err: err}
	}
	defer func() { b.finish(&res, s, p, d, prefix) }()
	res.Times, res.Err = benchkit.Measure(d, p.Started, b.o.Timeout, b.o.Think, dirs.Cwd, [2]string{prompt1, prompt2})
	return res
}

// finish ends a run: the client disposes, the server gets SIGTERM, then
// what is left of its tree is killed; the run's peaks and fake API
// requests go into res.
func (b *bench) finish(res *benchkit.Result, s server, p *benchkit.Process, d *driver, prefix string) {
	d.quit()
	exited := p.Signal(syscall.SIGTERM, benchkit.ExitGrace)
	p.Stop(benchkit.ExitGrace)
	if !exited && res.Err == nil && !s.Anchor {
		res.Err = fmt.Errorf("%s did not exit within %v of SIGTERM", s.Name, benchkit.ExitGrace)
	}
	res.Lingered = !exited && s.Anchor
	p.Record(res, os.Stderr, s.Name+prefix, b.o.Verbose)
	for _, r := range b.srv.Requests() {
		if r.Prefix == prefix {
			res.APIRequests++
			res.APISummary = append(res.APISummary, fmt.Sprintf("%s %q", r.Model, benchkit.FirstLine(r.LastText, 60)))
		}
	}
}

// command is server s's command line and environment for a run in dirs
// on port; the daemon's HOME gets the claude binary and the adapter's
// launcher, as its install would have put them there.
func (b *bench) command(s server, dirs benchkit.Dirs, prefix string, port int) (argv, env []string, err error) {
	argv = slices.Clone(s.Argv)
	for i, a := range argv {
		switch a {
		case "PORT":
			argv[i] = strconv.Itoa(port)
		case "LISTEN":
			argv[i] = "127.0.0.1:" + strconv.Itoa(port)
		}
	}
	env = append(fakemessages.Env(b.srv.URL+prefix, dirs.Home), s.Env...)
	if s.daemon {
		err = b.provision(dirs.Home)
	}
	return argv, env, err
}

// provision puts into home what `sandbox-agent install-agent claude`
// would have: the native claude (here the pinned one) and a launcher of
// its ACP agent process (here Zed's adapter on that claude).
func (b *bench) provision(home string) error {
	bin := filepath.Join(home, ".local/share/sandbox-agent/bin")
	if err := os.MkdirAll(filepath.Join(bin, "agent_processes"), 0o755); err != nil {
		return err
	}
	if err := os.Symlink(b.claudePath, filepath.Join(bin, "claude")); err != nil {
		return err
	}
	launcher := fmt.Sprintf("#!/bin/sh\nCLAUDE_CODE_EXECUTABLE=%s exec %s \"$@\"\n", shellQuote(b.claudePath), shellQuote(b.o.adapter))
	return os.WriteFile(filepath.Join(bin, "agent_processes", "claude-acp"), []byte(launcher), 0o755)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// freePort is a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("finding a free port: %v is no TCP address", ln.Addr())
	}
	return addr.Port, nil
}
