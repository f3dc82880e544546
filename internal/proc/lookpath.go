package proc

import (
	"fmt"
	"os"
	"os/exec"
)

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
