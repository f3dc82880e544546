package proc

import (
	"fmt"
	"os"
)

// pipes are a child's stdin, stdout and (if lent) stderr: the child's
// ends and ours.
type pipes struct{ child, ours [3]*os.File }

// newPipes makes the pipes, stderr's too if asked.
func newPipes(stderr bool) (*pipes, error) {
	ps := &pipes{}
	n := 2
	if stderr {
		n = 3
	}
	for i := range n {
		r, w, err := os.Pipe()
		if err != nil {
			ps.closeChild()
			ps.closeOurs()
			return nil, fmt.Errorf("making a pipe: %w", err)
		}
		if i == 0 { // stdin: the child reads
			ps.child[i], ps.ours[i] = r, w
		} else {
			ps.child[i], ps.ours[i] = w, r
		}
	}
	return ps, nil
}

func (ps *pipes) closeChild() { closeAll(ps.child[:]) }
func (ps *pipes) closeOurs()  { closeAll(ps.ours[:]) }

func closeAll(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}
