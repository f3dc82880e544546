package serve

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// DefaultBodyTimeout bounds the reading of a request's body, from when
// its headers are in: past it the read fails and the connection is
// closed. A 10 MiB message (the largest a client may send) needs
// 175 KB/s.
const DefaultBodyTimeout = 60 * time.Second

// hasBody is whether r announces a body (a Content-Length, or chunked).
func hasBody(r *http.Request) bool { return r.ContentLength != 0 }

// closeUnread has the connection of r closed once it is answered,
// without its body read: its reads are made to fail at once. The server
// would otherwise read (and wait for) up to 256 KB of a body no handler
// reads before it answers, and as much again when it closes the body.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	if hasBody(r) {
		w.Header().Set("Connection", "close")
		http.NewResponseController(w).SetReadDeadline(time.Now())
	}
}

// boundBody puts a deadline d from now on reading r's body, and returns r
// with a body that lifts it once the body has been read to its end (what
// the server reads after that, to see the client go, waits for nothing).
// A request without a body, or whose connection takes no deadline, is r.
func boundBody(w http.ResponseWriter, r *http.Request, d time.Duration) *http.Request {
	if !hasBody(r) {
		return r
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
		return r
	}
	r2 := r.WithContext(r.Context()) // the server keeps r, and reads r's body itself once the handler is done
	r2.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
	return r2
}

// deadlineBody is a request's body under a read deadline, which it lifts
// when it reaches the body's end.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.once.Do(func() { b.rc.SetReadDeadline(time.Time{}) })
	}
	return n, err
}
