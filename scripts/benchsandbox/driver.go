package main

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/fakemessages"
	"github.com/acpbridge/acpbridge/scripts/internal/benchkit"
)

//go:embed driver.mjs
var driverScript []byte

// driverKit is what every run's client needs: node, and a directory with
// driver.mjs beside a link to the SDK's node_modules (Node looks for
// packages beside the script).
type driverKit struct {
	node, dir, version string
}

func newDriverKit(sdk string) (*driverKit, error) {
	pkg := filepath.Join(sdk, "sandbox-agent", "package.json")
	if _, err := os.Stat(pkg); err != nil {
		return nil, fmt.Errorf("no sandbox-agent SDK in %s (bash scripts/install-tools.sh sandbox-agent): %v", sdk, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("the client needs node: %w", err)
	}
	dir, err := os.MkdirTemp("", "benchsandbox-client-")
	if err != nil {
		return nil, err
	}
	k := &driverKit{node: node, dir: dir, version: packageVersion(pkg)}
	if err := os.Symlink(sdk, filepath.Join(dir, "node_modules")); err != nil {
		k.close()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "driver.mjs"), driverScript, 0o644); err != nil {
		k.close()
		return nil, err
	}
	return k, nil
}

func (k *driverKit) close() { os.RemoveAll(k.dir) }

// packageVersion is the version a package.json names.
func packageVersion(path string) string {
	var p struct{ Version string }
	b, _ := os.ReadFile(path)
	json.Unmarshal(b, &p)
	return p.Version
}

// driver is one run's client, a benchkit.Session: driver.mjs, loaded and
// waiting for its commands, and the server's base URL.
type driver struct {
	base, label string
	verbose     bool
	cmd         *exec.Cmd
	stdin       io.WriteCloser
	lines       chan string   // its stdout, line by line
	done        chan struct{} // closed once it has exited and its stdout is read
	stderr      strings.Builder
}

var _ benchkit.Session = (*driver)(nil)

// start starts a client of the server at base for agent, and waits until
// it has loaded the SDK.
func (k *driverKit) start(base, agent, label string, verbose bool) (*driver, error) {
	d := &driver{base: base, label: label, verbose: verbose, lines: make(chan string, 16), done: make(chan struct{})}
	d.cmd = exec.Command(k.node, "driver.mjs", base, agent)
	d.cmd.Dir = k.dir
	d.cmd.Stderr = &d.stderr
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if d.stdin, err = d.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the client: %w", err)
	}
	go d.read(stdout)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.line(ctx); err != nil {
		d.stop()
		return nil, fmt.Errorf("the client did not start: %w", err)
	}
	return d, nil
}

// read passes the client's stdout on, line by line, then waits for it.
func (d *driver) read(stdout io.Reader) {
	defer close(d.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		d.lines <- sc.Text()
	}
	close(d.lines)
	d.cmd.Wait()
}

// line is the client's next line.
func (d *driver) line(ctx context.Context) (string, error) {
	select {
	case l, ok := <-d.lines:
		if !ok {
			return "", fmt.Errorf("the client exited: %s", strings.TrimSpace(d.stderr.String()))
		}
		return l, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// do sends a command and decodes its answer into out.
func (d *driver) do(ctx context.Context, cmd map[string]string, out any) error {
	b, _ := json.Marshal(cmd)
	if _, err := d.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%s: writing to the client: %w", cmd["cmd"], err)
	}
	l, err := d.line(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd["cmd"], err)
	}
	var res struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(l), &res); err != nil || !res.OK {
		return fmt.Errorf("%s: the client says %s", cmd["cmd"], l)
	}
	if d.verbose {
		fmt.Fprintf(os.Stderr, "  %s client: %s\n", d.label, benchkit.FirstLine(l, 200))
	}
	if out != nil {
		return json.Unmarshal([]byte(l), out)
	}
	return nil
}

// Initialize waits for the server to answer GET /v1/health, then has the
// client connect and initialize its ACP server.
func (d *driver) Initialize(ctx context.Context) (string, error) {
	start := time.Now()
	if err := waitHealthy(ctx, d.base); err != nil {
		return "", err
	}
	if d.verbose {
		fmt.Fprintf(os.Stderr, "  %s: /v1/health answered after %v of waiting\n", d.label, time.Since(start).Round(time.Millisecond))
	}
	return "", d.do(ctx, map[string]string{"cmd": "init"}, nil)
}

// NewSession is createSession.
func (d *driver) NewSession(ctx context.Context, cwd string) error {
	return d.do(ctx, map[string]string{"cmd": "new", "cwd": cwd}, nil)
}

// Turn is a prompt, which must end the turn with the fake's answer.
func (d *driver) Turn(ctx context.Context, prompt string) error {
	var res struct {
		StopReason string `json:"stopReason"`
		Text       string `json:"text"`
	}
	if err := d.do(ctx, map[string]string{"cmd": "turn", "prompt": prompt}, &res); err != nil {
		return err
	}
	if res.StopReason != "end_turn" || !strings.Contains(res.Text, fakemessages.AnswerTextPrefix) {
		return fmt.Errorf("turn %q: stop reason %q, text %q; want end_turn and the fake's answer", prompt, res.StopReason, res.Text)
	}
	return nil
}

// Done is closed once the client has exited.
func (d *driver) Done() <-chan struct{} { return d.done }

// quit has the client dispose (its ACP servers deleted) and exit.
func (d *driver) quit() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d.do(ctx, map[string]string{"cmd": "quit"}, nil)
}

// stop ends the client, killing it if it has not exited within 2 s; what
// it still prints is dropped.
func (d *driver) stop() {
	d.stdin.Close()
	kill := time.NewTimer(2 * time.Second)
	defer kill.Stop()
	lines := d.lines
	for {
		select {
		case <-d.done:
			return
		case _, ok := <-lines:
			if !ok {
				lines = nil
			}
		case <-kill.C:
			d.cmd.Process.Kill()
		}
	}
}

// waitHealthy polls GET base/v1/health every 5 ms until it answers 200.
func waitHealthy(ctx context.Context, base string) error {
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/health", nil)
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /v1/health: %s (is sandbox-agent's API mounted at /v1?)", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("the server did not become healthy: %w", ctx.Err()), last)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
