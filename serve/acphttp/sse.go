package acphttp

import (
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/core"
)

// keepAlive is how often an idle SSE stream gets a comment, as the SDK's
// server-sse.js sends one.
const keepAlive = 15 * time.Second

// get serves a connection's or a session's SSE stream.
func (h *acpHandler) get(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(strings.ToLower(r.Header.Get("Accept")), "text/event-stream") {
		text(w, http.StatusNotAcceptable, "Not Acceptable")
		return
	}
	id := r.Header.Get(HeaderConnectionID)
	if id == "" {
		text(w, http.StatusBadRequest, "Missing Acp-Connection-Id")
		return
	}
	hc := h.lookup(id)
	if hc == nil {
		text(w, http.StatusNotFound, "Unknown Acp-Connection-Id")
		return
	}
	session := r.Header.Get(HeaderSessionID)
	box := hc.main
	if session != "" {
		var err error
		if box, err = hc.sessionStream(session); err != nil {
			text(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	l := box.Acquire()
	switch {
	case l == nil && hc.c.Err() != nil:
		text(w, http.StatusNotFound, "Unknown Acp-Connection-Id")
		return
	case l == nil:
		text(w, http.StatusConflict, "Outbound stream already has an active receiver")
		return
	}
	defer func() {
		l.Release()
		if session != "" {
			hc.released(session, box)
		}
	}()
	hc.stream(w, r, l)
}

// stream writes what l receives as SSE events until the stream ends, the
// client goes, or a write waits Limits.MaxStall.
func (hc *httpConn) stream(w http.ResponseWriter, r *http.Request, l *core.Lease) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	stop := hc.c.UnblockWrites(rc)
	defer stop()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		m, ok, err := l.TryNext()
		switch {
		case err != nil:
			return
		case ok:
			if !hc.write(w, rc, "data: ", m.Raw, "\n\n") {
				return
			}
			continue
		}
		select {
		case <-l.Wake():
		case <-tick.C:
			if !hc.write(w, rc, ":", nil, "\n\n") {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// write writes one SSE event and flushes it, within Limits.MaxStall.
func (hc *httpConn) write(w http.ResponseWriter, rc *http.ResponseController, prefix string, data []byte, suffix string) bool {
	rc.SetWriteDeadline(time.Now().Add(hc.limits.MaxStall))
	if _, err := io.WriteString(w, prefix); err != nil {
		return false
	}
	if _, err := w.Write(data); err != nil {
		return false
	}
	if _, err := io.WriteString(w, suffix); err != nil {
		return false
	}
	return rc.Flush() == nil
}
