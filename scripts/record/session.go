package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/syncbuf"
	"github.com/acpbridge/acpbridge/internal/testkit/testproc"
	"github.com/acpbridge/acpbridge/scripts/internal/recordkit"
)

// recorder is what a recording has before its CLI starts: the log, on a
// stderr that the CLI shares, and the temporary HOME with its working
// directory.
type recorder struct {
	stderr    io.Writer // locked: the CLI's stderr goes there too
	logf      func(format string, args ...any)
	home, cwd string
	done      func() // removes the HOME, unless -keep
}

// newRecorder logs as "record AGENT: " on stderr and makes the HOME
// (tempHome) with the directories dirs.
func newRecorder(agent string, stderr io.Writer, keep bool, dirs ...string) (*recorder, error) {
	// A child's stderr and the recorder's log share one writer.
	r := &recorder{stderr: &syncbuf.Writer{W: stderr}}
	r.logf = func(format string, args ...any) { fmt.Fprintf(r.stderr, "record "+agent+": "+format+"\n", args...) }
	var err error
	r.home, r.cwd, r.done, err = tempHome("record"+agent+"-", keep, r.logf, dirs...)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// cli is how to run the CLI being recorded.
type cli struct {
	name      string // in messages: "the CLI", "codex"
	path      string
	args, env []string
}

// A conversation is an agent's side of a recording.
type conversation interface {
	// handle acts on line n (from 1) of the CLI's stdout, once recorded.
	handle(line []byte, n int)
	// converse does the handshake and the turns, each turn's end awaited.
	converse() error
	// excuse is nil for an exit error of the CLI that makes a fine
	// recording, else err.
	excuse(err error) error
}

// record opens the output c.out, starts cl in r's working directory and
// has the conversation newConv makes talk to it, while every line of its
// stdout goes, rewritten by rw, to the output. Then it ends the CLI and
// finishes the recording with the fake's requests.
func (r *recorder) record(c common, cl cli, rw recordkit.Rewriter, requests func() any, newConv func(*session) conversation) error {
	bw, closeOut, err := output(c.out)
	if err != nil {
		return err
	}
	defer closeOut()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := r.start(ctx, cl)
	if err != nil {
		return err
	}
	conv := newConv(s)
	go s.copyStdout(bw, rw, conv.handle)
	failed := s.stop(cancel, conv.converse(), conv.excuse)
	return finish(failed, bw, c, requests(), rw)
}

// session is the CLI being recorded: JSON lines go to its stdin (send),
// and copyStdout reads its stdout.
type session struct {
	name   string // as in cli
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	start  time.Time
	logf   func(format string, args ...any)
	mu     sync.Mutex // serialises sends

	readerDone chan struct{} // closed when copyStdout returns
	scanErr    error         // why reading stdout stopped; read after readerDone
	firstLine  time.Duration // spawn → first stdout line; read after readerDone
}

// start starts cl in r's working directory, its stderr to r's, in a
// process group of its own that is killed whole when ctx ends.
func (r *recorder) start(ctx context.Context, cl cli) (*session, error) {
	cmd := exec.CommandContext(ctx, cl.path, cl.args...)
	cmd.Dir, cmd.Env, cmd.Stderr = r.cwd, cl.env, r.stderr
	cmd.SysProcAttr = testproc.GroupAttr()
	cmd.Cancel = func() error { return testproc.KillGroup(cmd.Process.Pid) }
	cmd.WaitDelay = 5 * time.Second
	s := &session{name: cl.name, cmd: cmd, logf: r.logf, readerDone: make(chan struct{})}
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if s.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	s.start = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r.logf("started %s %s", cl.path, strings.Join(recordkit.QuoteAll(cl.args), " "))
	return s, nil
}

// send writes v as one JSON line.
func (s *session) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err = s.stdin.Write(append(b, '\n'))
	return err
}

// copyStdout reads the CLI's stdout to its end: each line goes, rewritten
// by rw, to bw (flushed, so that -o - shows the stream as it comes), then
// to handle. It closes readerDone when it returns.
func (s *session) copyStdout(bw *bufio.Writer, rw recordkit.Rewriter, handle func(line []byte, n int)) {
	defer close(s.readerDone)
	sc := bufio.NewScanner(s.stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if n == 1 {
			s.firstLine = time.Since(s.start)
		}
		line := sc.Bytes()
		bw.WriteString(rw.Rewrite(string(line)))
		bw.WriteByte('\n')
		bw.Flush()
		handle(line, n)
	}
	s.scanErr = sc.Err()
}

// decode unmarshals stdout line n into v; it logs and returns false if
// the line is not JSON.
func (s *session) decode(line []byte, n int, v any) bool {
	if err := json.Unmarshal(line, v); err != nil {
		s.logf("stdout line %d is not JSON: %v", n, err)
		return false
	}
	return true
}

// next returns the first value from ch that match accepts; if the CLI's
// stdout ends first, the error says ended, and if timeout passes first,
// late.
func next[T any](s *session, ch <-chan T, timeout time.Duration, match func(T) bool, ended, late string) (T, error) {
	deadline := time.After(timeout)
	for {
		var zero T
		select {
		case v := <-ch:
			if match(v) {
				return v, nil
			}
		case <-s.readerDone:
			return zero, errors.New(ended)
		case <-deadline:
			return zero, errors.New(late)
		}
	}
}

// anyValue is a match for next that accepts every value.
func anyValue[T any](T) bool { return true }

// stop closes the CLI's stdin and gives it 10 s to exit before it is
// killed (cancel), reading all of its stdout first since Wait closes the
// pipe; it logs the timings. It returns failed, or else the first of the
// error reading stdout and the CLI's exit error (unless excused).
func (s *session) stop(cancel func(), failed error, excuse func(error) error) error {
	werr := excuse(s.end(cancel))
	if s.scanErr != nil && failed == nil {
		failed = fmt.Errorf("reading %s's stdout: %w", s.name, s.scanErr)
	}
	if werr != nil && failed == nil {
		failed = fmt.Errorf("%s: %w", s.name, werr)
	}
	return failed
}

// end closes the CLI's stdin, waits for its stdout to end (killing it
// after 10 s) and for it to exit, and returns Wait's error.
func (s *session) end(cancel func()) error {
	t0 := time.Now()
	s.stdin.Close()
	select {
	case <-s.readerDone:
	case <-time.After(10 * time.Second):
		s.logf("%s did not exit within 10s of stdin closing; killing it", s.name)
		cancel()
		<-s.readerDone
	}
	err := s.cmd.Wait()
	s.logf("first stdout line %v after spawn; exit %v after stdin closed (%v in all)",
		s.firstLine.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond), time.Since(s.start).Round(time.Millisecond))
	return err
}
