package page

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func getPage(t *testing.T, h http.Handler, method, path string, header http.Header) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func TestPageHandler_servesTheFiles(t *testing.T) {
	h := NewHandler(http.NotFoundHandler())
	for path, ctype := range map[string]string{
		"/":            "text/html; charset=utf-8",
		"/app.js":      "text/javascript; charset=utf-8",
		"/stream.js":   "text/javascript; charset=utf-8",
		"/app.css":     "text/css; charset=utf-8",
		"/favicon.svg": "image/svg+xml",
	} {
		res := getPage(t, h, "GET", path, nil)
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || len(body) == 0 {
			t.Errorf("GET %s: %d, %d bytes", path, res.StatusCode, len(body))
		}
		if got := res.Header.Get("Content-Type"); got != ctype {
			t.Errorf("GET %s: Content-Type %q, want %q", path, got, ctype)
		}
		for _, k := range []string{"Content-Security-Policy", "ETag", "X-Content-Type-Options", "Referrer-Policy"} {
			if res.Header.Get(k) == "" {
				t.Errorf("GET %s: no %s", path, k)
			}
		}
	}
}

func TestPageHandler_refuses(t *testing.T) {
	h := NewHandler(http.NotFoundHandler())
	cases := []struct {
		method, path string
		status       int
	}{
		{"GET", "/nope", 404},
		{"GET", "/index.html", 404}, // the page is at /
		{"GET", "/assets/app.js", 404},
		{"POST", "/", 405},
		{"DELETE", "/app.js", 405},
	}
	for _, c := range cases {
		if res := getPage(t, h, c.method, c.path, nil); res.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, res.StatusCode, c.status)
		}
	}
}

func TestPageHandler_revalidates(t *testing.T) {
	h := NewHandler(http.NotFoundHandler())
	etag := getPage(t, h, "GET", "/app.js", nil).Header.Get("ETag")
	res := getPage(t, h, "GET", "/app.js", http.Header{"If-None-Match": {etag}})
	if res.StatusCode != http.StatusNotModified {
		t.Errorf("GET /app.js with its ETag: %d, want 304", res.StatusCode)
	}
	if res := getPage(t, h, "HEAD", "/", nil); res.StatusCode != 200 {
		t.Errorf("HEAD /: %d", res.StatusCode)
	}
}

func TestPageRequest(t *testing.T) {
	for _, c := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/", true},
		{"HEAD", "/app.js", true},
		{"GET", "/app.css", true},
		{"POST", "/", false},
		{"GET", "/api/chat", false},
		{"POST", "/api/chat", false},
		{"GET", "/v1/agents", false},
		{"GET", "/acp", false},
		{"GET", "/index.html", false},
	} {
		if got := Request(httptest.NewRequest(c.method, c.path, nil)); got != c.want {
			t.Errorf("Request(%s %s) = %v, want %v", c.method, c.path, got, c.want)
		}
	}
}

// TestPage_referencesResolve checks that every file index.html and the
// modules name is embedded, and that the HTML has no inline script or
// style (the CSP forbids them).
func TestPage_referencesResolve(t *testing.T) {
	texts := map[string]string{}
	err := fs.WalkDir(files, "assets", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, name)
		texts[strings.TrimPrefix(name, "assets")] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	html := texts["/index.html"]
	refs := regexp.MustCompile(`(?:src|href)="(/[^"]*)"`).FindAllStringSubmatch(html, -1)
	imports := regexp.MustCompile(`(?m)^import .* from '\./([^']+)';$`)
	for name, text := range texts {
		if strings.HasSuffix(name, ".js") {
			for _, m := range imports.FindAllStringSubmatch(text, -1) {
				refs = append(refs, []string{"", "/" + m[1]})
			}
		}
	}
	if len(refs) < 4 {
		t.Fatalf("found only %d references; the patterns are out of date", len(refs))
	}
	for _, r := range refs {
		if _, ok := texts[r[1]]; !ok {
			t.Errorf("%s is referenced but not embedded", r[1])
		}
	}
	if regexp.MustCompile(`<script(?:[^>]*)>[^<]|<style|\son[a-z]+=`).MatchString(html) {
		t.Error("index.html has an inline script, style or handler, which the page's CSP refuses")
	}
}
