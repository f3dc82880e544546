// Package proc runs an agent CLI as a supervised child process: its own
// process group (so the whole tree goes when it does), killed if the bridge
// dies, stderr kept as a bounded tail for error messages and never mixed
// into the bridge's stdout, and a shutdown ladder of stdin EOF, SIGTERM,
// SIGKILL.
package proc

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec says what to run.
type Spec struct {
	Path string
	Args []string
	Dir  string
	Env  []string // nil means the bridge's environment
}

// Process is a running child. Stdin and Stdout are its pipes; the caller
// reads Stdout until EOF (or an error). Everything the child wrote before
// it exited can still be read: the pipe is not closed at its exit, only
// DrainGrace later, in case a grandchild keeps it open.
type Process struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser

	stdout *os.File
	cmd    *exec.Cmd
	path   string // what runs (the command may be its supervisor)
	stderr *Tail
	done   chan struct{} // closed when the process has exited
	err    error         // how it exited; set before done closes
	stop   sync.Once
}

// Grace is how long each step of the shutdown ladder waits.
const Grace = 2 * time.Second

// DrainGrace is how long reads of Stdout may still block once the process
// has exited: long enough for what it wrote last, short enough that a
// grandchild holding the pipe (a tool left running) does not hold up the
// reader. The pipe is closed after twice that.
const DrainGrace = time.Second

// Start starts the process.
func Start(s Spec) (*Process, error) {
	path, args, wrapped := supervised(s.Path, s.Args)
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Env = s.Dir, s.Env
	cmd.SysProcAttr = sysProcAttr()
	if wrapped {
		superviseAttr(cmd.SysProcAttr)
	}
	p := &Process{cmd: cmd, path: s.Path, stderr: NewTail(16 << 10), done: make(chan struct{})}
	cmd.Stderr = p.stderr
	var err error
	if p.Stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	// os/exec's StdoutPipe is closed by Wait as soon as the process exits,
	// which can lose its last lines; this pipe is the Process's to close.
	r, w, err := os.Pipe()
	if err != nil {
		p.Stdin.Close()
		return nil, fmt.Errorf("starting %s: %w", s.Path, err)
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		p.Stdin.Close()
		r.Close()
		return nil, fmt.Errorf("starting %s: %w", s.Path, err)
	}
	p.stdout, p.Stdout = r, r
	go p.wait()
	return p, nil
}

func (p *Process) wait() {
	err := p.cmd.Wait()
	if err != nil {
		err = fmt.Errorf("%s exited: %w%s", p.name(), err, p.tail())
	}
	p.err = err
	close(p.done)
	p.stdout.SetReadDeadline(time.Now().Add(DrainGrace))
	time.AfterFunc(2*DrainGrace, func() { p.stdout.Close() })
}

func (p *Process) name() string { return p.path }

func (p *Process) tail() string {
	if t := strings.TrimSpace(ansi.ReplaceAllString(p.stderr.String(), "")); t != "" {
		return "; stderr: " + t
	}
	return ""
}

// ansi matches terminal colour codes, which CLIs write to stderr even when
// it is not a terminal.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// Pid is the child's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process exited (nil for status 0); valid after Done.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// Exited describes the exit for an error message: the status and the
// stderr tail, even when the status was 0.
func (p *Process) Exited() error {
	if err := p.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%s exited%s", p.name(), p.tail())
}

// Stderr returns the tail of what the process wrote to stderr.
func (p *Process) Stderr() string { return p.stderr.String() }

// Stop ends the process: stdin closed, then SIGTERM to its group, then
// SIGKILL, Grace apart. It returns once the process has exited; what it
// left running in its group (children that outlived it) gets SIGTERM.
func (p *Process) Stop() {
	p.stop.Do(func() {
		defer signalGroup(p.cmd.Process.Pid, syscall.SIGTERM)
		p.Stdin.Close()
		for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
			if sig != 0 {
				signalGroup(p.cmd.Process.Pid, sig)
			}
			select {
			case <-p.done:
				return
			case <-time.After(Grace):
			}
		}
		<-p.done
	})
	<-p.done
}

// Terminate stops a process that does not exit when its stdin ends (a
// server): SIGTERM to its process group, then the rest of Stop's ladder.
func (p *Process) Terminate() {
	signalGroup(p.cmd.Process.Pid, syscall.SIGTERM)
	p.Stop()
}

// Signal sends sig to the process group (SIGINT: what Ctrl-C in a
// terminal does).
func (p *Process) Signal(sig syscall.Signal) error {
	return signalGroup(p.cmd.Process.Pid, sig)
}

// Kill sends SIGKILL to the process group at once (tests use it to play a
// crash).
func (p *Process) Kill() error {
	return signalGroup(p.cmd.Process.Pid, syscall.SIGKILL)
}

// Tail keeps the last bytes written to it.
type Tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// NewTail returns a Tail keeping max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// LookPath finds an agent's executable: the override variable if set (a
// path), else name on PATH.
func LookPath(name, envVar string) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		found, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", envVar, p, err)
		}
		return found, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found on PATH (install it, or set %s to its path): %w", name, envVar, err)
	}
	return p, nil
}
