package serve

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/acpbridge/acpbridge/serve/internal/privfile"
)

// The files Run keeps in Options.StateDir while it serves.
const (
	// InfoFile is {"url": "http://HOST:PORT", "pid": N}: where this
	// machine's clients find the server.
	InfoFile = "serve.json"
	// TokenFile holds the token New made (no newline), for this machine's
	// clients.
	TokenFile = "serve.token"
)

// MinTokenLength is the shortest token New takes: that of the ones it
// makes (32 random bytes, hex).
const MinTokenLength = 64

// info is serve.json.
type info struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
}

// setToken takes o.Token, or makes one unless o.NoToken.
func (s *Server) setToken() error {
	switch {
	case s.opts.NoToken && s.opts.Token != "":
		return fmt.Errorf("--no-token, and a token is given ($ACPBRIDGE_TOKEN): choose one")
	case s.opts.NoToken:
		return nil
	case s.opts.Token != "":
		if !bearerToken(s.opts.Token) {
			return fmt.Errorf("the token ($ACPBRIDGE_TOKEN) may hold only letters, digits and -._~+/ (then =)")
		}
		if len(s.opts.Token) < MinTokenLength {
			return fmt.Errorf("the token ($ACPBRIDGE_TOKEN) is %d characters; it must be at least %d, as long as the ones acpbridge makes (openssl rand -hex 32 makes one)", len(s.opts.Token), MinTokenLength)
		}
		s.token = s.opts.Token
		return nil
	}
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	s.token, s.generated = hex.EncodeToString(b), true
	return nil
}

// bearerToken is whether t is an RFC 6750 b64token.
func bearerToken(t string) bool {
	body := bytes.TrimRight([]byte(t), "=")
	if len(body) == 0 {
		return false
	}
	for _, c := range body {
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || bytes.IndexByte([]byte("-._~+/"), c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// announce writes serve.token (for a token New made) and serve.json, then
// prints the token, the chat page's URL and, last, the serving line: once
// it is out, the server is ready.
func (s *Server) announce() error {
	where := ""
	if s.opts.StateDir != "" {
		if err := os.MkdirAll(s.opts.StateDir, 0o700); err != nil {
			return fmt.Errorf("state directory: %w", err)
		}
		if s.generated {
			path := filepath.Join(s.opts.StateDir, TokenFile)
			if err := privfile.Write(path, []byte(s.token)); err != nil {
				return err
			}
			where = " (saved in " + path + ")"
		}
		data, _ := json.Marshal(info{URL: s.url, PID: os.Getpid()})
		if err := privfile.Write(filepath.Join(s.opts.StateDir, InfoFile), append(data, '\n')); err != nil {
			return err
		}
	}
	if s.generated {
		fmt.Fprintf(s.stderr, "acpbridge: token %s%s\n", s.token, where)
	}
	fmt.Fprintf(s.stderr, "acpbridge: the chat page: %s\n", s.pageURL())
	fmt.Fprintf(s.stderr, "acpbridge: serving on %s\n", s.url)
	return nil
}

// pageURL is the chat page's address: with the token in its fragment
// (which no request carries; the page moves it to sessionStorage) when the
// server made the token and prints it anyway; a token given
// ($ACPBRIDGE_TOKEN) is not printed, and the page asks for it.
func (s *Server) pageURL() string {
	switch {
	case s.token == "":
		return s.url + "/"
	case s.generated:
		return s.url + "/#token=" + s.token
	}
	return s.url + "/ (it asks for the token)"
}

// withdraw removes the files announce wrote, if they are still this
// server's (another acpbridge serve on the same state directory may have
// written its own since).
func (s *Server) withdraw() {
	if s.opts.StateDir == "" {
		return
	}
	path := filepath.Join(s.opts.StateDir, InfoFile)
	var in info
	if data, err := os.ReadFile(path); err == nil && json.Unmarshal(data, &in) == nil && in.PID == os.Getpid() {
		os.Remove(path)
	}
	path = filepath.Join(s.opts.StateDir, TokenFile)
	if data, err := os.ReadFile(path); s.generated && err == nil && string(data) == s.token {
		os.Remove(path)
	}
}
