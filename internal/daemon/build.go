package daemon

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// Build is what tells this build of acpbridge from another: the
// executable (its path, size and modification time) and what the Go
// toolchain recorded of it (module version, VCS revision, whether the tree
// was modified, Go's version). Every daemon is keyed by it (Spec.Dir), so
// that an acpbridge upgraded or rebuilt in place never talks to a keeper,
// or a spares server, of another build: it starts its own, and the old
// one idles out once the bridges of its build have gone.
func Build() string {
	buildOnce.Do(func() { build = readBuild() })
	return build
}

var (
	buildOnce sync.Once
	build     string
)

// readBuild computes Build.
func readBuild() string {
	var b strings.Builder
	b.WriteString(runtime.Version())
	if exe, err := os.Executable(); err == nil {
		fmt.Fprintf(&b, " %s", exe)
		if fi, err := os.Stat(exe); err == nil {
			fmt.Fprintf(&b, " %d %d", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		fmt.Fprintf(&b, " %s@%s", bi.Main.Path, bi.Main.Version)
		for _, s := range bi.Settings {
			if strings.HasPrefix(s.Key, "vcs.") {
				fmt.Fprintf(&b, " %s=%s", s.Key, s.Value)
			}
		}
	}
	return b.String()
}
