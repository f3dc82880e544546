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
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/internal/proc"
)

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
		return nil, noSpare(a, len(files))
	}
	conn.SetDeadline(time.Time{})
	exit := bufio.NewReader(io.MultiReader(bytes.NewReader(rest), conn))
	return proc.Adopt(s.Path, a.Pid, files, func() error {
		defer conn.Close()
		return lentExit(exit)
	}), nil
}

// noSpare is what an answer a without a process lent says (nil: the
// server had none), n the number of files that came with it.
func noSpare(a spareAnswer, n int) error {
	switch {
	case a.Error != "":
		return errors.New(a.Error)
	case a.None:
		return nil
	}
	return fmt.Errorf("the spares server lent pid %d with %d files", a.Pid, n)
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
		return fmt.Errorf("the shared spares server that lent it went away (%v)", err)
	case *a.Exit != "":
		return errors.New(*a.Exit)
	}
	return nil
}

// askSpare sends one request and reads the answer, with the files that
// came with it and what was read after its line.
func askSpare(ctx context.Context, sock, op string, s proc.Spec) (*net.UnixConn, spareAnswer, []*os.File, []byte, error) {
	var a spareAnswer
	conn, err := dialUnix(ctx, sock)
	if err != nil {
		return nil, a, nil, nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(ioTimeout)
	}
	conn.SetDeadline(deadline)
	b, _ := json.Marshal(spareAsk{Op: op, Path: s.Path, Args: s.Args, Dir: s.Dir, Env: s.Env, Tag: s.Tag})
	if _, err := conn.Write(append(b, '\n')); err != nil {
		conn.Close()
		return nil, a, nil, nil, fmt.Errorf("asking the spares server: %w", err)
	}
	line, rest, files, err := readAnswer(conn)
	if err == nil {
		err = json.Unmarshal(line, &a)
		if err != nil {
			err = fmt.Errorf("the spares server's answer %q: %w", line, err)
		}
	}
	if err != nil {
		conn.Close()
		closeAll(files)
		return nil, a, nil, nil, err
	}
	return conn, a, files, rest, nil
}

// dialUnix connects to the Unix socket sock.
func dialUnix(ctx context.Context, sock string) (*net.UnixConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, err
	}
	conn, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("dialing %s: a %T, not a Unix socket", sock, c)
	}
	return conn, nil
}

// readAnswer reads the answer's line, the files that came with it, and
// what came after the line.
func readAnswer(conn *net.UnixConn) (line, rest []byte, files []*os.File, err error) {
	buf, oob := make([]byte, 4096), make([]byte, syscall.CmsgSpace(3*4))
	var got []byte
	for !bytes.Contains(got, []byte("\n")) {
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		files = append(files, receivedFiles(oob[:oobn])...)
		got = append(got, buf[:n]...)
		if err != nil {
			return nil, nil, files, fmt.Errorf("reading the spares server's answer: %w", err)
		}
	}
	line, rest, _ = bytes.Cut(got, []byte("\n"))
	return line, rest, files, nil
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
