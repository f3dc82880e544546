package sandbox

import (
	"context"
	"sync"
	"time"
)

// An event is one message of an eventLog: its SSE id and its JSON text.
type event struct {
	id   uint64
	data []byte
}

// An eventLog is what a sandbox-agent ACP server's SSE streams serve, as
// the daemon keeps it: every message the agent side writes, numbered from
// 1 (the events' ids), of which the newest are kept — at most maxEvents
// of them and maxBytes of text — for streams to replay from any id they
// name (Last-Event-ID) or from the oldest kept. Any number of streams
// follow it, each at its own pace; append never waits for one, and a
// stream that falls behind the oldest kept event skips to it (the events
// in between are lost to it).
type eventLog struct {
	maxEvents, maxBytes int

	mu      sync.Mutex    // protects the fields below
	events  []event       // kept, oldest first, from head on
	head    int           // events[:head] are dropped slots
	next    uint64        // the id of the next event
	bytes   int           // the text kept
	changed chan struct{} // closed (and replaced) by append
	streams int           // streams reading the log
	carried uint64        // the newest id a stream has sent
	sent    chan struct{} // closed (and replaced) when carried grows or a stream ends
}

func newEventLog(maxEvents, maxBytes int) *eventLog {
	return &eventLog{maxEvents: maxEvents, maxBytes: maxBytes, next: 1, changed: make(chan struct{}), sent: make(chan struct{})}
}

// append adds data as the next event, and returns its id; it drops the
// oldest events beyond the bounds (the newest is always kept).
func (l *eventLog) append(data []byte) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := l.next
	l.events = append(l.events, event{id: id, data: data})
	l.next++
	l.bytes += len(data)
	for len(l.events)-l.head > 1 && (len(l.events)-l.head > l.maxEvents || l.bytes > l.maxBytes) {
		l.bytes -= len(l.events[l.head].data)
		l.events[l.head] = event{}
		l.head++
	}
	if l.head >= 1024 && 2*l.head >= len(l.events) {
		l.events = append([]event(nil), l.events[l.head:]...)
		l.head = 0
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return id
}

// after returns up to max kept events with ids above id, oldest first, and
// how many events above id were dropped before the first returned (for a
// stream that fell behind). changed is closed when there may be more.
func (l *eventLog) after(id uint64, max int) (evs []event, dropped uint64, changed <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.events[l.head:]
	i := 0
	if len(kept) > 0 {
		first := kept[0].id
		if first > id+1 {
			dropped = first - id - 1
		}
		if first <= id {
			i = int(min(id-first+1, uint64(len(kept))))
		}
	}
	n := min(len(kept)-i, max)
	return append([]event(nil), kept[i:i+n]...), dropped, l.changed
}

// last is the id of the newest event (0 before any).
func (l *eventLog) last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next - 1
}

// open counts a stream that reads the log, unless max streams already do.
func (l *eventLog) open(max int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.streams >= max {
		return false
	}
	l.streams++
	return true
}

// close uncounts a stream.
func (l *eventLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.streams--
	l.wakeSentLocked()
}

// markSent notes that a stream has sent the events up to id.
func (l *eventLog) markSent(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id > l.carried {
		l.carried = id
		l.wakeSentLocked()
	}
}

func (l *eventLog) wakeSentLocked() {
	close(l.sent)
	l.sent = make(chan struct{})
}

// waitSent waits, at most max or until ctx is done, while a stream is open
// and none has sent event id yet.
func (l *eventLog) waitSent(ctx context.Context, id uint64, max time.Duration) {
	t := time.NewTimer(max)
	defer t.Stop()
	for {
		l.mu.Lock()
		if l.streams == 0 || l.carried >= id {
			l.mu.Unlock()
			return
		}
		sent := l.sent
		l.mu.Unlock()
		select {
		case <-sent:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// streamsOpen is how many streams read the log.
func (l *eventLog) streamsOpen() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.streams
}

// keptBytes is the text the log keeps.
func (l *eventLog) keptBytes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}
