//go:build !unix

package daemon

// Will: there are no daemons here (Attend returns no lease).
func (l *Lease) Will(string, Deed) error { return errNoDaemons }

// Unwill: there are no daemons here.
func (l *Lease) Unwill(string) error { return errNoDaemons }

func (w *will) close() {}
