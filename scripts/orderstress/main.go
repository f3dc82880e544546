// Command orderstress sends bursts of prompt pairs to an acpbridge binary
// on the mock agent, beside CPU hogs, and counts the pairs that ran, were
// answered or streamed out of order (see internal/testkit/pairorder). It
// exits 1 if any was. scripts/order-stress.sh builds the binary with -race
// and runs this beside the in-process stress.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"github.com/acpbridge/acpbridge/internal/testkit/pairorder"
)

func main() {
	bin := flag.String("bin", "bin/acpbridge", "the acpbridge binary")
	var cfg pairorder.Config
	flag.IntVar(&cfg.Sessions, "sessions", 10, "sessions, each sent its pairs at once")
	flag.IntVar(&cfg.Pairs, "pairs", 15, "pairs per session and round")
	flag.IntVar(&cfg.Rounds, "rounds", 20, "bursts, each sent once the last is answered")
	hogs := flag.Int("hogs", 2, "busy goroutines in this process, each with a CPU of its own")
	procs := flag.Int("gomaxprocs", 1, "the bridge's GOMAXPROCS")
	flag.Parse()
	res, err := run(*bin, cfg, *hogs, *procs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "orderstress:", err)
		os.Exit(2)
	}
	fmt.Println("binary:", res)
	if res.OutOfOrder > 0 || res.Failed > 0 {
		os.Exit(1)
	}
}

// run starts the bridge with its state in a directory of its own, and
// drives it until cfg's rounds are answered.
func run(bin string, cfg pairorder.Config, hogs, procs int) (pairorder.Result, error) {
	dir, err := os.MkdirTemp("", "orderstress")
	if err != nil {
		return pairorder.Result{}, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(bin, "--agent", "mock", "--shared=0", "--log-level", "warn")
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs), "ACPBRIDGE_STATE_DIR="+dir, "HOME="+dir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return pairorder.Result{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return pairorder.Result{}, err
	}
	if err := cmd.Start(); err != nil {
		return pairorder.Result{}, fmt.Errorf("starting %s: %w", bin, err)
	}
	runtime.GOMAXPROCS(hogs + 1)
	stop := pairorder.Hog(hogs)
	res, err := pairorder.Run(in, out, cfg)
	stop()
	if werr := cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("%s: %w", bin, werr)
	}
	return res, err
}
