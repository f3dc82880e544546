package cmd

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// SharedEnv sets --shared when the flag is not given: a duration, or 0
// (also off, false, no) to run every server in the bridge itself.
const SharedEnv = "ACPBRIDGE_SHARED"

// DefaultShared is how long the shared servers and spares outlive the
// last bridge that used them, unless --shared says otherwise: long enough
// that an editor restarted, a second window opened or a project switched
// to finds its agent up (a Claude spare, Codex's or OpenCode's server),
// short enough that what they hold (README: Shared servers, Memory) is
// given back soon after the user stops: a spare claude holds about 300 MB,
// an opencode serve about 500 MB.
const DefaultShared = 10 * time.Minute

// sharedTime settles o.shared: the flag if given (o.sharedAsked), else
// $ACPBRIDGE_SHARED, else DefaultShared; off on Windows, saying so only if
// it was asked for.
func sharedTime(o *options, log *slog.Logger) error {
	asked := o.sharedAsked
	if v, ok := os.LookupEnv(SharedEnv); ok && !asked {
		d, err := parseShared(v)
		if err != nil {
			return fmt.Errorf("$%s=%q: %w", SharedEnv, v, err)
		}
		o.shared, asked = d, true
	}
	if o.shared > 0 && runtime.GOOS == "windows" {
		if asked {
			log.Warn("--shared is off on Windows (its daemons need Unix sockets and flock): every bridge starts its own servers")
		}
		o.shared = 0
	}
	return nil
}

// parseShared reads $ACPBRIDGE_SHARED: a duration, 0 or a word for off,
// or a word for on (DefaultShared).
func parseShared(v string) (time.Duration, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "0", "off", "false", "no", "":
		return 0, nil
	case "1", "on", "true", "yes":
		return DefaultShared, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration such as 10m, or 0 for off")
	}
	return d, nil
}

// catalogDir is where backends keep the last catalog of models and
// options their servers gave (agentkit.Options.Catalogs), so that a
// session/new answers before the server has started: acpbridge/catalogs
// in the user's cache directory ($XDG_CACHE_HOME, else ~/.cache; on
// macOS ~/Library/Caches, on Windows %LocalAppData%). "" if there is
// none: every session/new then waits for its server's catalog.
func catalogDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "acpbridge", "catalogs")
}
