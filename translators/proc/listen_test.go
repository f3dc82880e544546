package proc

import (
	"fmt"
	"net"
	"os"
)

// listen is the "listen" child: a daemon's server that answers every
// connection on ./sock with its pid.
func listen() {
	l, err := net.Listen("unix", "sock")
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(1)
	}
	if os.Getenv("FAKE_DIE") != "" {
		fmt.Fprintln(os.Stderr, "dying at start on purpose")
		os.Exit(4)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		fmt.Fprintln(c, os.Getpid())
		c.Close()
	}
}
