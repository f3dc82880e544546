package cmd

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestStartup_packageInitsAreCheap: every bridge pays for what its
// packages do at init, before main runs, though most bridges never need
// it (serve's web page, a regexp for an agent not in use), so this
// module's packages compile, read and hash nothing then: their inits
// allocate next to nothing (GODEBUG=inittrace=1, acpbridge --version).
// The test kit's packages, which only tests link, are left out.
func TestStartup_packageInitsAreCheap(t *testing.T) {
	const maxBytes, maxAllocs = 8 << 10, 64
	cmd := exec.Command(os.Args[0], "--version")
	cmd.Env = append(os.Environ(), "ACPBRIDGE_TEST_AS_BRIDGE=1", "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("acpbridge --version: %v\n%s", err, stderr.Bytes())
	}
	seen := 0
	for sc := bufio.NewScanner(&stderr); sc.Scan(); {
		// init PKG @0.1 ms, 0.2 ms clock, BYTES bytes, ALLOCS allocs
		var pkg string
		var at, clock float64
		var bytes, allocs int
		if _, err := fmt.Sscanf(sc.Text(), "init %s @%f ms, %f ms clock, %d bytes, %d allocs", &pkg, &at, &clock, &bytes, &allocs); err != nil {
			continue
		}
		if !strings.HasPrefix(pkg, "github.com/acpbridge/acpbridge") || strings.Contains(pkg, "/internal/testkit/") {
			continue
		}
		seen++
		if bytes > maxBytes || allocs > maxAllocs {
			t.Errorf("package %s's init allocates %d bytes in %d allocations (at most %d in %d): do it at first use (sync.OnceValue)", pkg, bytes, allocs, maxBytes, maxAllocs)
		}
	}
	if seen == 0 {
		t.Fatalf("no init of this module's packages in the trace:\n%s", stderr.Bytes())
	}
}
