package opencode

import (
	"context"
	"net/http"
	"time"

	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
)

// OpenCode keeps an instance for every directory it has served (config,
// plugins, a snapshot repository, a file watcher) until told to dispose
// of it: each one costs its server CPU while idle, and a shared server
// serves every directory its users have worked in. The bridge disposes
// of a directory's instance once it no longer uses it (its last session
// there closed, or the bridge ended), unless another bridge does: on a
// shared server, each bridge that uses a directory holds a daemon.Use of
// it, and only the last one to leave disposes.

// disposeWait bounds the disposals of a bridge that ends.
const disposeWait = 10 * time.Second

// instanceUse is the bridge's use of one directory's instance: its
// sessions there (and the catalog's read), and its daemon.Use of it on a
// shared server.
type instanceUse struct {
	n   int
	use *daemon.Use // nil on a server of the bridge's own
}

// enter notes one more user of dir's instance in the bridge, taking the
// bridge's use of it first if it is the first: to be called before
// anything reaches the instance, and matched by a leave.
func (s *server) enter(ctx context.Context, dir string) error {
	s.instMu.Lock()
	defer s.instMu.Unlock()
	if u := s.instances[dir]; u != nil {
		u.n++
		return nil
	}
	u := &instanceUse{n: 1}
	if leased, ok := s.l.(*agentkit.Leased); ok {
		use, err := daemon.TakeUse(ctx, leased.Dir(), "opencode instance "+dir)
		if err != nil {
			return err
		}
		u.use = use
	}
	s.instances[dir] = u
	return nil
}

// leave ends one user of dir's instance; after the bridge's last, the
// instance is disposed of unless another bridge uses it.
func (s *server) leave(dir string) {
	s.instMu.Lock()
	defer s.instMu.Unlock()
	u := s.instances[dir]
	if u == nil {
		return
	}
	if u.n--; u.n > 0 {
		return
	}
	delete(s.instances, dir)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s.release(ctx, dir, u.use)
}

// leaveAll lets every instance the bridge uses go, as it ends.
func (s *server) leaveAll() {
	s.instMu.Lock()
	defer s.instMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), disposeWait)
	defer cancel()
	for dir, u := range s.instances {
		s.release(ctx, dir, u.use)
	}
	s.instances = map[string]*instanceUse{}
}

// release closes the bridge's event stream of dir and disposes of its
// instance, if no other bridge uses it (use, nil on a server of the
// bridge's own).
func (s *server) release(ctx context.Context, dir string, use *daemon.Use) {
	s.forget(dir)
	if use != nil {
		if !use.Leave() {
			return
		}
		defer use.Done()
	}
	if !s.alive() {
		return
	}
	if err := s.call(ctx, http.MethodPost, "/instance/dispose", dir, nil, nil); err != nil {
		s.log.Debug("opencode did not dispose of a directory's instance", "dir", dir, "err", err)
	}
}

// forget closes dir's event stream, before its instance is disposed of:
// the stream would reconnect, bootstrapping it again.
func (s *server) forget(dir string) {
	s.mu.Lock()
	es := s.streams[dir]
	delete(s.streams, dir)
	delete(s.prepared, dir)
	s.mu.Unlock()
	if es != nil {
		es.close()
	}
}
