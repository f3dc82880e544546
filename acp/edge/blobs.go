package edge

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/coder/acp-go-sdk"
)

// blobMin is the size from which a prompt's string goes around the SDK.
const blobMin = 64 << 10

// blobs keeps the large strings of session/prompt requests out of the
// SDK. A 10 MB image would otherwise be held five times over while the
// SDK reads, frames and decodes it (its line buffer, the raw params, a
// map of raw fields per content block, the decoded string), so the guard
// takes each large "data", "blob" or "text" value out of the line, hands
// the SDK a placeholder, and keeps the value: a string that shares the
// line's memory when it has no escapes. Server.Prompt puts the values
// back. What a request leaves unclaimed goes when its response is sent.
type blobs struct {
	prefix string // "acpbridge-blob:<random>:" — no client sends this

	mu    sync.Mutex
	next  int
	held  map[string]string   // placeholder → value
	byReq map[string][]string // request id → its placeholders
}

func newBlobs() *blobs {
	var r [8]byte
	rand.Read(r[:])
	return &blobs{prefix: "acpbridge-blob:" + hex.EncodeToString(r[:]) + ":", held: map[string]string{}, byReq: map[string][]string{}}
}

// extract returns line with the large values of the keys blobKeys
// replaced by placeholders, or line itself when it has none. line must be
// valid JSON and must not change afterwards: the values kept may share
// its memory.
func (b *blobs) extract(id json.RawMessage, line []byte) []byte {
	var out []byte
	last, key := 0, ""
	for i := 0; i < len(line); i++ {
		if line[i] != '"' {
			continue
		}
		end, escaped := stringEnd(line, i)
		if isKey(line, end) {
			key = string(line[i+1 : end])
		} else if end-i-1 >= blobMin && blobKeys[key] {
			if out == nil {
				out = make([]byte, 0, 4096)
			}
			out = append(out, line[last:i]...)
			out = strconv.AppendQuote(out, b.keep(idKey(id), line[i:end+1], escaped))
			last = end + 1
		}
		i = end
	}
	if out == nil {
		return line
	}
	return append(out, line[last:]...)
}

// blobKeys are the keys whose values may be large in a prompt: content
// blocks' text, images' and audio's data, resources' text and blob.
var blobKeys = map[string]bool{"data": true, "blob": true, "text": true}

// stringEnd is the index of the quote that ends the string starting at
// line[start], and whether the string has escapes.
func stringEnd(line []byte, start int) (end int, escaped bool) {
	for j := start + 1; j < len(line); j++ {
		switch line[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j, escaped
		}
	}
	return len(line) - 1, escaped
}

// isKey reports whether the string ending at end is an object key.
func isKey(line []byte, end int) bool {
	rest := bytes.TrimLeft(line[end+1:], " \t\r\n")
	return len(rest) > 0 && rest[0] == ':'
}

// keep holds one quoted value for request reqID and returns its
// placeholder.
func (b *blobs) keep(reqID string, quoted []byte, escaped bool) string {
	var v string
	if escaped {
		json.Unmarshal(quoted, &v) // valid: the guard checked the line
	} else {
		v = unsafe.String(&quoted[1], len(quoted)-2)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	p := b.prefix + strconv.Itoa(b.next)
	b.held[p] = v
	b.byReq[reqID] = append(b.byReq[reqID], p)
	return p
}

// take returns the value a placeholder stands for, and forgets it; any
// other string comes back as it is.
func (b *blobs) take(s string) string {
	if !strings.HasPrefix(s, b.prefix) {
		return s
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.held[s]
	if !ok {
		return s
	}
	delete(b.held, s)
	return v
}

// restore puts the kept values back into a prompt's content blocks.
func (b *blobs) restore(prompt []acp.ContentBlock) {
	for i := range prompt {
		c := &prompt[i]
		switch {
		case c.Text != nil:
			c.Text.Text = b.take(c.Text.Text)
		case c.Image != nil:
			c.Image.Data = b.take(c.Image.Data)
		case c.Audio != nil:
			c.Audio.Data = b.take(c.Audio.Data)
		case c.Resource != nil && c.Resource.Resource.TextResourceContents != nil:
			r := c.Resource.Resource.TextResourceContents
			r.Text = b.take(r.Text)
		case c.Resource != nil && c.Resource.Resource.BlobResourceContents != nil:
			r := c.Resource.Resource.BlobResourceContents
			r.Blob = b.take(r.Blob)
		}
	}
}

// forget drops what a request left unclaimed (it was refused, say).
func (b *blobs) forget(reqID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.byReq[reqID] {
		delete(b.held, p)
	}
	delete(b.byReq, reqID)
}
