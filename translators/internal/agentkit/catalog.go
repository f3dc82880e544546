package agentkit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// A backend whose sessions' options come from its server (the models
// codex app-server lists, the agents and models of opencode serve) keeps
// the last catalog it read on disk, per agent and configuration
// (Options.Catalogs): a session/new that finds one answers at once with
// its options, while the server starts and the session opens in the
// background; once the server's own catalog is read, a session whose
// options it changed is told so (agent.Events.ConfigChanged), and the
// file is brought up to date.

// CatalogFile is where the catalog of the agent run at path with args in
// env, by settings (as for DaemonSpec), is kept; "" if the backend keeps
// none (Options.Catalogs is "").
func (c CLI) CatalogFile(path string, args, env []string, settings ...string) string {
	if c.opts.Catalogs == "" {
		return ""
	}
	h := sha256.New()
	for _, k := range c.DaemonSpec(path, args, env, settings...).Key {
		fmt.Fprintf(h, "%d:%s\n", len(k), k)
	}
	return filepath.Join(c.opts.Catalogs, c.exe.Name+"-"+hex.EncodeToString(h.Sum(nil))[:16]+".json")
}

// LoadCatalog reads the catalog kept in file into v; false if there is
// none (or it can't be read).
func LoadCatalog(file string, v any) bool {
	if file == "" {
		return false
	}
	b, err := os.ReadFile(file)
	return err == nil && json.Unmarshal(b, v) == nil
}

// SaveCatalog keeps v in file, unless it holds v already; it reports
// whether v differs from what file held. A catalog that can't be written
// is only logged: the next session/new waits for the server instead.
func (c CLI) SaveCatalog(file string, v any) (changed bool) {
	b, err := json.Marshal(v)
	if err != nil || file == "" {
		return false
	}
	if old, err := os.ReadFile(file); err == nil && bytes.Equal(old, b) {
		return false
	}
	if err := writeFile(file, b); err != nil {
		c.log.Debug("keeping the catalog", "file", file, "err", err)
	}
	return true
}

// writeFile writes b to file whole or not at all (a temporary file
// renamed), making its directory if need be.
func writeFile(file string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".tmp*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
