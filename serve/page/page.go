package page

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// files holds the page at /: plain HTML, CSS and ES modules, no build step.
//
//go:embed assets
var files embed.FS

// pageCSP keeps the page to its own scripts, styles and server: no inline
// script, nothing fetched from elsewhere, not framed.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file, read once.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

// page serves the embedded files.
type page struct {
	assets   map[string]asset // by URL path: "/" is index.html
	notFound http.Handler
}

// NewHandler returns the page at / (its assets: index.html, its
// scripts and styles), for the server to mount at "/". It answers GET and
// HEAD of those files; notFound answers any other path. The files hold no secret, and a
// Browser's navigation carries no Authorization header, so the server
// lets Request's requests through without the token; the page itself
// reads the token from the URL's fragment (#token=…) and sends it on
// every API call.
func NewHandler(notFound http.Handler) http.Handler {
	e := embedded()
	if e.err != nil {
		// The files are compiled in, and a test reads them all.
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "500 Internal Server Error: the page's files: "+e.err.Error(), http.StatusInternalServerError)
		})
	}
	return &page{assets: e.page.assets, notFound: notFound}
}

// Request is whether r asks for one of the page's files (GET or HEAD),
// which the server serves without the token.
func Request(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := embedded().page
	if p == nil {
		return false
	}
	_, ok := p.assets[r.URL.Path]
	return ok
}

// loaded is the page read from files, or why it could not be.
type loaded struct {
	page *page
	err  error
}

// embedded is the page, read from files the first time a server asks for it
// (not when acpbridge starts: the stdio bridge never serves it, and reading
// it, hashing it and loading the system's MIME table cost milliseconds).
var embedded = sync.OnceValue(func() loaded {
	p, err := loadPage(files)
	return loaded{p, err}
})

// loadPage reads every file under assets/ into memory.
func loadPage(fsys fs.FS) (*page, error) {
	p := &page{assets: map[string]asset{}}
	err := fs.WalkDir(fsys, "assets", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		urlPath := strings.TrimPrefix(name, "assets")
		if urlPath == "/index.html" {
			urlPath = "/"
		}
		p.assets[urlPath] = newAsset(name, body)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, ok := p.assets["/"]; !ok {
		return nil, fmt.Errorf("no assets/index.html")
	}
	return p, nil
}

func newAsset(name string, body []byte) asset {
	sum := sha256.Sum256(body)
	ctype := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) { // not left to the system's MIME table
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	case ".css":
		ctype = "text/css; charset=utf-8"
	case ".html":
		ctype = "text/html; charset=utf-8"
	case ".svg":
		ctype = "image/svg+xml"
	}
	return asset{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

// ServeHTTP serves one file, revalidated by its ETag on every load (the
// files change with the binary).
func (p *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a, ok := p.assets[r.URL.Path]
	if !ok {
		p.notFound.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "405 Method Not Allowed: the page is only read", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
