//go:build unix

package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/internal/proc"
)

// ServeSpares is the spares server's whole life (see Spares); it returns
// the exit status.
func ServeSpares(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: acpbridge "+SparesCommand+" SOCKET TTL")
		return 2
	}
	ttl, err := time.ParseDuration(args[1])
	if err != nil || ttl <= 0 {
		fmt.Fprintf(os.Stderr, "acpbridge spares: bad time to live %q\n", args[1])
		return 2
	}
	os.Remove(args[0]) // a stale socket; the keeper holds the directory
	ln, err := net.Listen("unix", args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge spares: %v\n", err)
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		<-sigs
		ln.Close()
	}()
	srv := &spareServer{ttl: ttl, spares: map[string]*spare{}}
	for {
		conn, err := ln.Accept()
		if err != nil {
			break
		}
		go srv.serve(conn.(*net.UnixConn))
	}
	srv.stopAll()
	return 0
}

// spareServer keeps the spares, one per kind.
type spareServer struct {
	ttl    time.Duration
	mu     sync.Mutex
	spares map[string]*spare
	closed bool
}

type spare struct {
	p     *proc.Process
	made  time.Time
	timer *time.Timer
}

// serve answers one bridge's request.
func (s *spareServer) serve(conn *net.UnixConn) {
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReaderSize(io.LimitReader(conn, 1<<20), 4096).ReadBytes('\n')
	var ask spareAsk
	if err == nil {
		err = json.Unmarshal(line, &ask)
	}
	if err == nil && ask.Op != "warm" && ask.Op != "take" {
		err = fmt.Errorf("unknown op %q", ask.Op)
	}
	if err != nil {
		writeAnswer(conn, spareAnswer{Error: fmt.Sprintf("reading the request: %v", err)}, nil)
		return
	}
	conn.SetReadDeadline(time.Time{})
	if ask.Op == "warm" {
		err := s.make(ask)
		writeAnswer(conn, spareAnswer{Error: errText(err)}, nil)
		return
	}
	p := s.take(ask.spec().Kind())
	if p == nil {
		writeAnswer(conn, spareAnswer{None: true}, nil)
		s.make(ask) // for the next take
		return
	}
	s.lend(conn, p, ask)
}

// lend hands p to the bridge on conn, starts the next spare of its kind,
// and tells the bridge when p exits.
func (s *spareServer) lend(conn *net.UnixConn, p *proc.Process, ask spareAsk) {
	files := p.Lend()
	err := writeAnswer(conn, spareAnswer{Pid: p.Pid()}, files)
	closeAll(files) // the bridge's now, or nobody's: p ends at its stdin's end
	s.make(ask)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge spares: lending %s (pid %d): %v\n", ask.Path, p.Pid(), err)
		return
	}
	<-p.Done()
	status := errText(p.ExitStatus())
	writeAnswer(conn, spareAnswer{Exit: &status}, nil)
}

// make starts a spare of ask's kind unless there is one.
func (s *spareServer) make(ask spareAsk) error {
	kind := ask.spec().Kind()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("the spares server is stopping")
	}
	if sp := s.spares[kind]; sp != nil {
		return nil
	}
	if len(s.spares) >= maxSpares {
		s.dropOldest()
	}
	p, err := proc.Start(ask.spec())
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge spares: %v\n", err)
		return err
	}
	sp := &spare{p: p, made: time.Now()}
	sp.timer = time.AfterFunc(s.ttl, func() { s.drop(kind, sp) })
	s.spares[kind] = sp
	go func() { // one that exits by itself is nobody's to take
		<-p.Done()
		s.drop(kind, sp)
	}()
	return nil
}

// take removes and returns the running spare of kind, or nil.
func (s *spareServer) take(kind string) *proc.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.spares[kind]
	if sp == nil {
		return nil
	}
	delete(s.spares, kind)
	sp.timer.Stop()
	select {
	case <-sp.p.Done():
		return nil
	default:
		return sp.p
	}
}

// drop stops sp, if it is still the spare of kind.
func (s *spareServer) drop(kind string, sp *spare) {
	s.mu.Lock()
	if s.spares[kind] != sp {
		s.mu.Unlock()
		return
	}
	delete(s.spares, kind)
	s.mu.Unlock()
	sp.timer.Stop()
	sp.p.Stop()
}

// dropOldest stops the spare made first; s.mu is held.
func (s *spareServer) dropOldest() {
	var oldest string
	for k, sp := range s.spares {
		if oldest == "" || sp.made.Before(s.spares[oldest].made) {
			oldest = k
		}
	}
	sp := s.spares[oldest]
	delete(s.spares, oldest)
	sp.timer.Stop()
	go sp.p.Stop()
}

// stopAll stops every spare nobody took, and waits for them.
func (s *spareServer) stopAll() {
	s.mu.Lock()
	s.closed = true
	spares := s.spares
	s.spares = nil
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, sp := range spares {
		sp.timer.Stop()
		wg.Go(sp.p.Stop)
	}
	wg.Wait()
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// writeAnswer writes a as a JSON line, with files (SCM_RIGHTS) if any.
func writeAnswer(conn *net.UnixConn, a spareAnswer, files []*os.File) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, 0, len(files))
		for _, f := range files {
			fd, err := rawFd(f)
			if err != nil {
				return err
			}
			fds = append(fds, fd)
		}
		oob = syscall.UnixRights(fds...)
	}
	conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, _, err = conn.WriteMsgUnix(b, oob, nil)
	return err
}

// rawFd is f's descriptor, left as it is (File.Fd would make it blocking,
// and it is shared with whoever receives it).
func rawFd(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var fd int
	if err := rc.Control(func(u uintptr) { fd = int(u) }); err != nil {
		return 0, err
	}
	return fd, nil
}

// WarmSpare asks the spares server on sock to have a process started as
// s ready for a take.
func WarmSpare(ctx context.Context, sock string, s proc.Spec) error {
	conn, a, _, _, err := askSpare(ctx, sock, "warm", s)
	if err != nil {
		return err
	}
	conn.Close()
	if a.Error != "" {
		return errors.New(a.Error)
	}
	return nil
}

// TakeSpare takes the process started as s from the spares server on
// sock; nil if it had none (it starts one for the next take).
func TakeSpare(ctx context.Context, sock string, s proc.Spec) (*proc.Process, error) {
	conn, a, files, rest, err := askSpare(ctx, sock, "take", s)
	if err != nil {
		return nil, err
	}
	if a.Pid <= 0 || len(files) != 3 {
		conn.Close()
		closeAll(files)
		switch {
		case a.Error != "":
			return nil, errors.New(a.Error)
		case a.None:
			return nil, nil
		}
		return nil, fmt.Errorf("the spares server lent pid %d with %d files", a.Pid, len(files))
	}
	conn.SetDeadline(time.Time{})
	exit := bufio.NewReader(io.MultiReader(bytes.NewReader(rest), conn))
	return proc.Adopt(s.Path, a.Pid, files, func() error {
		defer conn.Close()
		return lentExit(exit)
	}), nil
}

// lentExit reads how a lent process exited.
func lentExit(r *bufio.Reader) error {
	line, err := r.ReadBytes('\n')
	var a spareAnswer
	if err == nil {
		err = json.Unmarshal(line, &a)
	}
	switch {
	case err != nil || a.Exit == nil:
		return fmt.Errorf("the spares server that lent it went away (%v)", err)
	case *a.Exit != "":
		return errors.New(*a.Exit)
	}
	return nil
}

// askSpare sends one request and reads the answer, with the files that
// came with it and what was read after its line.
func askSpare(ctx context.Context, sock, op string, s proc.Spec) (*net.UnixConn, spareAnswer, []*os.File, []byte, error) {
	var a spareAnswer
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, a, nil, nil, err
	}
	conn := c.(*net.UnixConn)
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	conn.SetDeadline(deadline)
	b, _ := json.Marshal(spareAsk{Op: op, Path: s.Path, Args: s.Args, Dir: s.Dir, Env: s.Env})
	if _, err := conn.Write(append(b, '\n')); err != nil {
		conn.Close()
		return nil, a, nil, nil, fmt.Errorf("asking the spares server: %w", err)
	}
	buf, oob := make([]byte, 4096), make([]byte, syscall.CmsgSpace(3*4))
	var got []byte
	var files []*os.File
	for !bytes.Contains(got, []byte("\n")) {
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		files = append(files, receivedFiles(oob[:oobn])...)
		got = append(got, buf[:n]...)
		if err != nil {
			conn.Close()
			closeAll(files)
			return nil, a, nil, nil, fmt.Errorf("reading the spares server's answer: %w", err)
		}
	}
	line, rest, _ := bytes.Cut(got, []byte("\n"))
	if err := json.Unmarshal(line, &a); err != nil {
		conn.Close()
		closeAll(files)
		return nil, a, nil, nil, fmt.Errorf("the spares server's answer %q: %w", line, err)
	}
	return conn, a, files, rest, nil
}

// receivedFiles are the descriptors in a control message.
func receivedFiles(oob []byte) []*os.File {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			syscall.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "spare"))
		}
	}
	return files
}

// SparesServe is the ready probe of the spares daemon in dir: nil once its
// server takes connections.
func SparesServe(dir string) error {
	c, err := net.Dial("unix", SparesSocket(dir))
	if err == nil {
		c.Close()
	}
	return err
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}
