//go:build !unix

package daemon_test

// lentChild plays no child here: there are no spares to lend.
func lentChild(string) {}
