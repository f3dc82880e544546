package serve

import (
	"strings"
	"testing"
)

// TestServer_page: the server serves the page's files without the token,
// but still checks their Host and Origin; anything else at / wants the
// token.
func TestServer_page(t *testing.T) {
	s, stderr := newServer(t, Options{})
	r := start(t, s, stderr)
	own := strings.TrimPrefix(r.URL(), "http://")
	for _, c := range []struct {
		name, method, path string
		headers            map[string]string
		status             int
	}{
		{"the page", "GET", "/", nil, 200},
		{"its script", "GET", "/app.js", nil, 200},
		{"its script, from itself", "GET", "/stream.js", map[string]string{"Origin": "http://" + own}, 200},
		{"a foreign Host", "GET", "/", map[string]string{"Host": "evil.example:80"}, 403},
		{"a foreign Origin", "GET", "/app.js", map[string]string{"Origin": "https://evil.example"}, 403},
		{"a POST to it", "POST", "/", nil, 401},
		{"no such file", "GET", "/secret.txt", nil, 401},
		{"no such file, with the token", "GET", "/secret.txt", map[string]string{"Authorization": r.bearer()}, 404},
		{"a POST to it, with the token", "POST", "/", map[string]string{"Authorization": r.bearer()}, 405},
	} {
		resp, _ := r.do(t, c.method, c.path, c.headers)
		if resp.StatusCode != c.status {
			t.Errorf("%s: %s %s: %s, want %d", c.name, c.method, c.path, resp.Status, c.status)
		}
	}
}
