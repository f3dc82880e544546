package bridge

import (
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/coder/acp-go-sdk"
)

// bigContent is the size from which a message chunk's content is encoded
// by hand (encodeChunk) rather than by json.Marshal.
const bigContent = 64 << 10

// encodeChunk encodes a message chunk whose content is large — an image
// in a prompt, a pasted file — as the SDK would, in pieces to write one
// after the other (persist.Entry.Parts): the large string itself, when it
// needs no escaping (base64 never does), is written from where it is —
// for a prompt, the memory of the line it came in (see acp's blobs) —
// and the rest is built in buffers of their exact size. json.Marshal of
// an acp.SessionUpdate copies a 10 MB image some eight times (the SDK's
// MarshalJSON goes through maps), which an image prompt pays for in the
// bridge's memory. ok is false for anything else, which goes to
// json.Marshal.
func encodeChunk(u acp.SessionUpdate) (parts [][]byte, ok bool) {
	var kind string
	var c chunk
	switch {
	case u.UserMessageChunk != nil:
		kind, c = "user_message_chunk", chunk(*u.UserMessageChunk)
	case u.AgentMessageChunk != nil:
		kind, c = "agent_message_chunk", chunk(*u.AgentMessageChunk)
	case u.AgentThoughtChunk != nil:
		kind, c = "agent_thought_chunk", chunk(*u.AgentThoughtChunk)
	default:
		return nil, false
	}
	if len(c.Meta) > 0 {
		return nil, false
	}
	fields, big := blockFields(c.Content)
	if len(big) < bigContent {
		return nil, false
	}
	e := &encoder{big: big, asIs: stringLen(big) == len(big)+2}
	e.raw(`{"content":`)
	e.object(fields)
	if c.MessageId != nil {
		e.raw(`,"messageId":`)
		e.string(string(*c.MessageId))
	}
	e.raw(`,"sessionUpdate":`)
	e.string(kind)
	e.raw("}")
	return append(e.parts, e.b), true
}

// encoder writes JSON into pieces: the large string big, when it needs no
// escaping (asIs), is a piece of its own that shares its memory.
type encoder struct {
	big   string
	asIs  bool
	parts [][]byte
	b     []byte
}

func (e *encoder) raw(s string) { e.b = append(e.b, s...) }

func (e *encoder) string(s string) {
	if e.asIs && len(s) == len(e.big) && unsafe.StringData(s) == unsafe.StringData(e.big) {
		e.b = append(e.b, '"')
		e.parts = append(e.parts, e.b, unsafe.Slice(unsafe.StringData(s), len(s)))
		e.b = []byte{'"'}
		return
	}
	if len(s) >= bigContent {
		e.b = slices.Grow(e.b, stringLen(s)+64) // once, not by doubling
	}
	e.b = appendString(e.b, s)
}

func (e *encoder) object(fields []field) {
	e.raw("{")
	for i, f := range fields {
		if i > 0 {
			e.raw(",")
		}
		e.string(f.key)
		e.raw(":")
		if f.object != nil {
			e.object(f.object)
		} else {
			e.string(f.value)
		}
	}
	e.raw("}")
}

// chunk is the shape the SDK's three message chunk updates share.
type chunk acp.SessionUpdateUserMessageChunk

// field is one key of a JSON object, in the order written: a string, or
// a nested object.
type field struct {
	key    string
	value  string
	object []field
}

// blockFields are a content block's fields as the SDK writes them, and its
// largest string; nil for a block encodeChunk leaves to json.Marshal.
func blockFields(b acp.ContentBlock) (fields []field, big string) {
	switch {
	case b.Text != nil && b.Text.Annotations == nil && len(b.Text.Meta) == 0:
		return []field{{key: "text", value: b.Text.Text}, {key: "type", value: "text"}}, b.Text.Text
	case b.Image != nil && b.Image.Annotations == nil && len(b.Image.Meta) == 0:
		fields = []field{{key: "data", value: b.Image.Data}, {key: "mimeType", value: b.Image.MimeType}, {key: "type", value: "image"}}
		if b.Image.Uri != nil {
			fields = append(fields, field{key: "uri", value: *b.Image.Uri})
		}
		return fields, b.Image.Data
	case b.Audio != nil && b.Audio.Annotations == nil && len(b.Audio.Meta) == 0:
		return []field{{key: "data", value: b.Audio.Data}, {key: "mimeType", value: b.Audio.MimeType}, {key: "type", value: "audio"}}, b.Audio.Data
	case b.Resource != nil && b.Resource.Annotations == nil && len(b.Resource.Meta) == 0:
		return resourceFields(b.Resource.Resource)
	}
	return nil, ""
}

func resourceFields(r acp.EmbeddedResourceResource) ([]field, string) {
	var key, big, uri string
	var mime *string
	switch {
	case r.TextResourceContents != nil && len(r.TextResourceContents.Meta) == 0:
		t := r.TextResourceContents
		key, big, mime, uri = "text", t.Text, t.MimeType, t.Uri
	case r.BlobResourceContents != nil && len(r.BlobResourceContents.Meta) == 0:
		bl := r.BlobResourceContents
		key, big, mime, uri = "blob", bl.Blob, bl.MimeType, bl.Uri
	default:
		return nil, ""
	}
	inner := []field{{key: key, value: big}}
	if mime != nil {
		inner = append(inner, field{key: "mimeType", value: *mime})
	}
	inner = append(inner, field{key: "uri", value: uri})
	return []field{{key: "resource", object: inner}, {key: "type", value: "resource"}}, big
}

const hex = "0123456789abcdef"

// stringLen is the length of s as appendString writes it.
func stringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 0x20 && c != '"' && c != '\\':
				n++
			case c == '"', c == '\\', c == '\n', c == '\r', c == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// appendString appends s as a JSON string, as encoding/json writes it
// without HTML escaping: invalid UTF-8 becomes U+FFFD, and U+2028 and
// U+2029 are escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(b, s[start:]...), '"')
}
