package benchkit

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Serve is `acpbridge serve --agent mock` running for a measurement: on a
// loopback port the system picks, with a token of its own (as long as the
// ones the server makes), its transcripts in a state directory given.
type Serve struct {
	Cmd   *exec.Cmd
	URL   string // http://127.0.0.1:PORT
	Addr  string // 127.0.0.1:PORT
	Token string
}

// StartServe starts bin's serve and returns once it says where it listens.
func StartServe(bin, state string) (*Serve, error) {
	b := make([]byte, 32)
	rand.Read(b)
	token := hex.EncodeToString(b)
	cmd := exec.Command(bin, "serve", "--agent", "mock", "--state-dir", state, "--listen", "127.0.0.1:0", "--log-level", "error")
	cmd.Env = append(os.Environ(), "ACPBRIDGE_TOKEN="+token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "acpbridge: serving on "); ok {
			go func() { // the rest of its log, read so that it never blocks on it
				for sc.Scan() {
				}
			}()
			url = strings.TrimSpace(url)
			return &Serve{Cmd: cmd, URL: url, Addr: strings.TrimPrefix(url, "http://"), Token: token}, nil
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	return nil, fmt.Errorf("acpbridge serve printed no URL: %v", sc.Err())
}

// Stop interrupts the server (SIGINT) and returns how long it took to exit.
func (s *Serve) Stop() time.Duration {
	t0 := time.Now()
	s.Cmd.Process.Signal(os.Interrupt)
	s.Cmd.Wait()
	return time.Since(t0)
}
