package bridge

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// ListPageSize is how many sessions one session/list page holds.
const ListPageSize = 100

// List returns one page of sessions, newest first, from every agent: the
// store's and those live in this process. cwd, if not empty, keeps only
// sessions in that directory. cursor is "" or a previous page's next
// cursor; the returned cursor is "" on the last page.
func (m *Manager) List(cwd, cursor string) ([]acp.SessionInfo, string, error) {
	if cwd != "" {
		if err := checkCwd(cwd); err != nil {
			return nil, "", err
		}
		cwd = filepath.Clean(cwd)
	}
	after, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	hs, err := m.headers()
	if err != nil {
		return nil, "", err
	}
	hs = filterCwd(hs, cwd)
	sort.Slice(hs, func(i, j int) bool { return before(hs[i], hs[j]) })
	start := 0
	if after != nil {
		start = sort.Search(len(hs), func(i int) bool { return before(*after, hs[i]) })
	}
	end := min(start+ListPageSize, len(hs))
	page := make([]acp.SessionInfo, 0, end-start)
	for _, h := range hs[start:end] {
		page = append(page, info(h))
	}
	next := ""
	if end < len(hs) {
		next = encodeCursor(hs[end-1])
	}
	return page, next, nil
}

// headers merges the store's headers with those of live sessions, which
// may be newer.
func (m *Manager) headers() ([]persist.Header, error) {
	byID := make(map[string]persist.Header)
	if m.cfg.Store != nil {
		hs, err := m.cfg.Store.List()
		if err != nil {
			return nil, fmt.Errorf("listing sessions: %w", err)
		}
		for _, h := range hs {
			byID[h.ID] = h
		}
	}
	m.mu.Lock()
	live := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		live = append(live, s)
	}
	m.mu.Unlock()
	for _, s := range live {
		h := s.Header()
		if old, ok := byID[h.ID]; !ok || !h.UpdatedAt.Before(old.UpdatedAt) {
			byID[h.ID] = h
		}
	}
	hs := make([]persist.Header, 0, len(byID))
	for _, h := range byID {
		hs = append(hs, h)
	}
	return hs, nil
}

func filterCwd(hs []persist.Header, cwd string) []persist.Header {
	if cwd == "" {
		return hs
	}
	kept := hs[:0]
	for _, h := range hs {
		if filepath.Clean(h.Cwd) == cwd {
			kept = append(kept, h)
		}
	}
	return kept
}

// before orders sessions newest first, then by id.
func before(a, b persist.Header) bool {
	if !a.UpdatedAt.Equal(b.UpdatedAt) {
		return a.UpdatedAt.After(b.UpdatedAt)
	}
	return a.ID < b.ID
}

func info(h persist.Header) acp.SessionInfo {
	updated := h.UpdatedAt.UTC().Format(time.RFC3339Nano)
	meta := map[string]any{"agent": h.Agent}
	if h.NativeID != "" {
		meta["nativeSessionId"] = h.NativeID
	}
	return acp.SessionInfo{SessionId: acp.SessionId(h.ID), Cwd: h.Cwd, AdditionalDirectories: h.Directories, Title: optional(h.Title),
		UpdatedAt: &updated, Meta: map[string]any{"acpbridge": meta}}
}

// A cursor is the sort key of the last session of the previous page.
func encodeCursor(h persist.Header) string {
	key := strconv.FormatInt(h.UpdatedAt.UnixNano(), 10) + ":" + h.ID
	return base64.RawURLEncoding.EncodeToString([]byte(key))
}

func decodeCursor(c string) (*persist.Header, error) {
	if c == "" {
		return nil, nil
	}
	bad := fmt.Errorf("%w: invalid cursor %q", agent.ErrInvalidParams, c)
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, bad
	}
	ns, id, ok := strings.Cut(string(raw), ":")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || !persist.ValidID(id) {
		return nil, bad
	}
	return &persist.Header{ID: id, UpdatedAt: time.Unix(0, n)}, nil
}
