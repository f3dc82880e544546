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
// there closed, and a minute passed), unless another bridge does: on a
// shared server, each bridge that uses a directory holds a daemon.Use of
// it, and only the last one to leave disposes.

// linger is how long an instance the bridge no longer uses is kept before
// it is disposed of: a session opened there meanwhile (an editor's next
// chat) finds it ready, and an idle instance costs far less CPU a minute
// than its bootstrap's few seconds.
const linger = time.Minute

// instanceUse is the bridge's use of one directory's instance: its
// sessions there (and the catalog's read), and its daemon.Use of it on a
// shared server.
type instanceUse struct {
	n    int
	use  *daemon.Use // nil on a server of the bridge's own
	idle *time.Timer // while n is 0: disposes of it once it has lingered
}

// enter notes one more user of dir's instance in the bridge, taking the
// bridge's use of it first if it is the first: to be called before
// anything reaches the instance, and matched by a leave.
func (s *server) enter(ctx context.Context, dir string) error {
	s.instMu.Lock()
	defer s.instMu.Unlock()
	if u := s.instances[dir]; u != nil {
		if u.idle != nil {
			u.idle.Stop() // if it has fired, expire finds n > 0
			u.idle = nil
		}
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

// leave ends one user of dir's instance; once the bridge's last has left
// and the instance has lingered unused, it is disposed of unless another
// bridge uses it.
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
	if s.linger > 0 {
		u.idle = time.AfterFunc(s.linger, func() { s.expire(dir, u) })
		return
	}
	delete(s.instances, dir)
	s.releaseNow(dir, u.use)
}

// expire disposes of dir's instance, unused since u's timer started,
// unless it is used again (or already let go).
func (s *server) expire(dir string, u *instanceUse) {
	s.instMu.Lock()
	defer s.instMu.Unlock()
	if s.instances[dir] != u || u.n > 0 {
		return
	}
	delete(s.instances, dir)
	s.releaseNow(dir, u.use)
}

// releaseNow is release within a call's time.
func (s *server) releaseNow(dir string, use *daemon.Use) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s.release(ctx, dir, use)
}

// leaveAll lets every instance the bridge uses go, as it ends, without
// disposing of them: the next bridge in the same project (an editor
// restarted, a second window) finds a shared server's instance ready, as
// it finds the server, rather than waiting seconds for its bootstrap; they
// go with the server once no bridge has used it for --shared's time. The
// bridge's own server ends with it.
func (s *server) leaveAll() {
	s.instMu.Lock()
	defer s.instMu.Unlock()
	for dir, u := range s.instances {
		if u.idle != nil {
			u.idle.Stop()
		}
		s.forget(dir)
		if u.use != nil && u.use.Leave() {
			u.use.Done()
		}
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
