package agentkit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// Stamp tells one version of the executable at path from another: the
// file it resolves to (npm's bin entries are symbolic links into the
// package), its size and modification time. An agent upgraded in place
// gets a new stamp, so that a daemon keyed by it is not the old version's.
func Stamp(path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return path
	}
	fi, err := os.Stat(real)
	if err != nil {
		return real
	}
	return fmt.Sprintf("%s %d %d", real, fi.Size(), fi.ModTime().UnixNano())
}

// Contents is a digest of what the files at paths hold, in order (a file
// that is missing or can't be read counts as such): for the settings
// files an agent reads at its start, which decide what a server or a
// spare started ahead of need does.
func Contents(paths ...string) string {
	h := sha256.New()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintf(h, "%s: none\n", p)
			continue
		}
		fmt.Fprintf(h, "%s: %d\n", p, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
