// Package privfile writes the files acpbridge serve keeps for this
// machine's clients: mode 0600, replaced whole.
package privfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write writes data to path, mode 0600, replacing it whole: a
// reader sees the old file or the new one.
func Write(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // once renamed, there is nothing to remove
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o600) // CreateTemp's mode already is; Windows ignores it
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
