package serve

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"
)

// startConn runs fakeAgent (or connect) on a connection whose messages
// all go to one Mailbox.
func startConn(t *testing.T, reg *Registry, connect Connector, detached func(string)) (*Conn, *Mailbox) {
	t.Helper()
	if connect == nil {
		connect = fakeAgent
	}
	var box *Mailbox
	c := reg.NewConn(ConnOptions{Agent: "test", Route: func(m Msg) { box.Push(m) }, Detached: detached})
	box = c.NewMailbox()
	if err := c.Start(connect); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(nil); <-c.Done() })
	return c, box
}

func TestConn_callAndRoute(t *testing.T) {
	reg := newRegistry(t, Limits{})
	c, box := startConn(t, reg, nil, nil)
	res, err := c.Call(t.Context(), msg(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`))
	if err != nil || res.Kind != Response || res.Key() != "n:0" {
		t.Fatalf("Call(initialize) = %+v, %v", res, err)
	}
	if err := c.Send(msg(t, `{"jsonrpc":"2.0","id":"a","method":"session/new","params":{"cwd":"/"}}`)); err != nil {
		t.Fatal(err)
	}
	l := box.Acquire()
	if box.Acquire() != nil {
		t.Error("a second receiver acquired the mailbox")
	}
	m := next(t, l)
	if m.Kind != Response || m.ResultSessionID != "s1" || m.Seq != 1 {
		t.Errorf("session/new answered %+v", m)
	}
	if !c.Attached("s1") {
		t.Error("s1 is not attached after session/new")
	}
	if reg.Get(c.ID()) != c {
		t.Error("Get does not find the connection")
	}
}

func TestConn_takeover(t *testing.T) {
	reg := newRegistry(t, Limits{})
	detached := make(chan string, 1)
	a, aBox := startConn(t, reg, nil, func(id string) { detached <- id })
	b, bBox := startConn(t, reg, nil, nil)
	a.Send(msg(t, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`))
	next(t, aBox.Acquire())
	b.Send(msg(t, `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s1"}}`))
	lb := bBox.Acquire()
	next(t, lb) // the replayed update
	if m := next(t, lb); m.Kind != Response {
		t.Fatalf("load answered %+v", m)
	}
	select {
	case id := <-detached:
		if id != "s1" {
			t.Errorf("detached %q", id)
		}
	case <-time.After(time.Minute):
		t.Fatal("a was not told that s1 went")
	}
	if a.Attached("s1") || !b.Attached("s1") {
		t.Errorf("attached: a %v, b %v; want s1 on b only", a.Attached("s1"), b.Attached("s1"))
	}
	b.Send(msg(t, `{"jsonrpc":"2.0","id":2,"method":"session/close","params":{"sessionId":"s9"}}`))
	next(t, lb)
	if !b.Attached("s1") {
		t.Error("closing another session detached s1")
	}
	b.Send(msg(t, `{"jsonrpc":"2.0","id":3,"method":"session/close","params":{"sessionId":"s1"}}`))
	next(t, lb)
	if b.Attached("s1") {
		t.Error("s1 is still attached after session/close")
	}
}

func TestConn_overflowDropsWithoutBlocking(t *testing.T) {
	reg := newRegistry(t, Limits{MaxBuffered: 256 << 10})
	returned := make(chan error, 1)
	connect := func(ctx context.Context, r io.Reader, w io.Writer, agent string) error {
		err := fakeAgent(ctx, r, w, agent)
		returned <- err
		return err
	}
	c, _ := startConn(t, reg, connect, nil)
	c.Send(msg(t, `{"jsonrpc":"2.0","id":1,"method":"flood","params":{"bytes":10000000}}`))
	select {
	case <-c.Done():
	case <-time.After(time.Minute):
		t.Fatal("the connection was not dropped")
	}
	<-returned
	// Overflowed, not stalled: the agent side's writes went on while
	// nobody read.
	if err := c.Err(); !errors.Is(err, ErrOverflow) {
		t.Errorf("Err() = %v, want ErrOverflow", err)
	}
	if reg.Get(c.ID()) != nil || reg.Len() != 0 {
		t.Error("the dropped connection is still registered")
	}
}

func TestConn_stalledDropped(t *testing.T) {
	reg := newRegistry(t, Limits{MaxStall: 200 * time.Millisecond})
	c, _ := startConn(t, reg, nil, nil)
	c.Send(msg(t, `{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}`))
	select {
	case <-c.Done():
	case <-time.After(time.Minute):
		t.Fatal("the stalled connection was not dropped")
	}
	if err := c.Err(); !errors.Is(err, ErrStalled) {
		t.Errorf("Err() = %v, want ErrStalled", err)
	}
}

func TestConn_readingIsNotStalled(t *testing.T) {
	reg := newRegistry(t, Limits{MaxStall: 500 * time.Millisecond})
	c, box := startConn(t, reg, nil, nil)
	l := box.Acquire()
	for i := range 8 {
		c.Send(msg(t, `{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}`))
		next(t, l)
		if i%2 == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	time.Sleep(800 * time.Millisecond) // nothing waits: no stall
	if err := c.Err(); err != nil {
		t.Errorf("Err() = %v on a connection whose client reads", err)
	}
}

func TestConn_waitRoom(t *testing.T) {
	reg := newRegistry(t, Limits{MaxBuffered: 10 << 10})
	c, box := startConn(t, reg, nil, nil)
	c.Send(msg(t, `{"jsonrpc":"2.0","id":1,"method":"flood","params":{"bytes":6000}}`))
	l := box.Acquire()
	for range 6 {
		next(t, l)
	}
	if err := c.WaitRoom(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.Send(msg(t, `{"jsonrpc":"2.0","id":2,"method":"flood","params":{"bytes":7000}}`))
	waitFor(t, "the flood queued", func() bool { return box.Queued() == 9 }) // the first answer, 7 updates and the second
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := c.WaitRoom(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitRoom with 7 KB of 10 KB held = %v, want it to wait", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.WaitRoom(t.Context()) }()
	for range 4 {
		next(t, l)
	}
	if err := <-done; err != nil {
		t.Errorf("WaitRoom once read = %v", err)
	}
}

func TestConn_closeEndsConnector(t *testing.T) {
	reg := newRegistry(t, Limits{})
	c, box := startConn(t, reg, nil, nil)
	l := box.Acquire()
	c.Close(nil)
	<-c.Done()
	if _, err := l.Next(t.Context()); !errors.Is(err, ErrClosed) {
		t.Errorf("Next after Close = %v", err)
	}
	if err := c.Send(msg(t, `{"jsonrpc":"2.0","id":1,"method":"echo"}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close = %v", err)
	}
	if _, err := c.Call(t.Context(), msg(t, `{"jsonrpc":"2.0","id":1,"method":"echo"}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close = %v", err)
	}
}

func TestConn_connectorReturnDrains(t *testing.T) {
	reg := newRegistry(t, Limits{})
	connect := func(ctx context.Context, r io.Reader, w io.Writer, agent string) error {
		io.WriteString(w, `{"jsonrpc":"2.0","method":"bye"}`+"\n")
		return nil
	}
	c, box := startConn(t, reg, connect, nil)
	<-c.Done()
	l := box.Acquire()
	if m := next(t, l); m.Method != "bye" {
		t.Errorf("got %+v", m)
	}
	if _, err := l.Next(t.Context()); err != io.EOF {
		t.Errorf("Next after the end = %v, want io.EOF", err)
	}
	if !errors.Is(c.Err(), ErrEnded) {
		t.Errorf("Err() = %v", c.Err())
	}
}

func TestMailbox_replayAfter(t *testing.T) {
	reg := newRegistry(t, Limits{})
	c := reg.NewConn(ConnOptions{})
	box := c.NewMailbox()
	box.Retain(1 << 20)
	for range 5 {
		box.Push(msg(t, `{"jsonrpc":"2.0","method":"n"}`))
	}
	l := box.Acquire()
	for want := uint64(1); want <= 3; want++ {
		if m := next(t, l); m.Seq != want {
			t.Fatalf("Seq %d, want %d", m.Seq, want)
		}
	}
	l.Release()
	l, err := box.AcquireAfter(1)
	if err != nil {
		t.Fatal(err)
	}
	for want := uint64(2); want <= 5; want++ {
		if m := next(t, l); m.Seq != want {
			t.Fatalf("after resume: Seq %d, want %d", m.Seq, want)
		}
	}
	l.Release()
	box.Retain(len(`{"jsonrpc":"2.0","method":"n"}`))
	if _, err := box.AcquireAfter(2); !errors.Is(err, ErrReplayGap) {
		t.Errorf("AcquireAfter past what is kept = %v", err)
	}
	if _, err := box.AcquireAfter(4); err != nil {
		t.Errorf("AcquireAfter(4) = %v", err)
	}
}

func TestRegistry_closeAll(t *testing.T) {
	reg := NewRegistry(Limits{}, testLogger())
	var cs []*Conn
	for range 3 {
		c, _ := startConn(t, reg, nil, nil)
		cs = append(cs, c)
	}
	if err := reg.CloseAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if !errors.Is(c.Err(), ErrShutdown) {
			t.Errorf("Err() = %v", c.Err())
		}
	}
	if err := reg.NewConn(ConnOptions{}).Start(fakeAgent); !errors.Is(err, ErrShutdown) {
		t.Errorf("Start after CloseAll = %v", err)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		kind    Kind
		key     string
		session string
		err     error
	}{
		{in: `{"jsonrpc":"2.0","id":1,"method":"x","params":{"sessionId":"a"}}`, kind: Request, key: "n:1", session: "a"},
		{in: `{"jsonrpc":"2.0","id":1.0,"result":{}}`, kind: Response, key: "n:1"},
		{in: `{"jsonrpc":"2.0","id":"1","error":{}}`, kind: Response, key: "s:1"},
		{in: `{"jsonrpc":"2.0","id":null,"method":"x"}`, kind: Request, key: "null"},
		{in: "{\n \"jsonrpc\": \"2.0\",\n \"method\": \"x\"\n}", kind: Notification},
		{in: `{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, kind: Other, key: "n:1"},
		{in: `{"jsonrpc":"1.0","id":1,"method":"x"}`, kind: Other, key: "n:1"},
		{in: `{"id":{},"method":"x"}`, kind: Other},
		{in: `[]`, err: ErrBatch},
		{in: `3`, err: ErrNotObject},
		{in: `{`, err: ErrInvalidJSON},
		{in: ``, err: ErrInvalidJSON},
	} {
		m, err := Parse([]byte(tc.in))
		if err != tc.err || err != nil {
			if err != tc.err {
				t.Errorf("Parse(%s) error %v, want %v", tc.in, err, tc.err)
			}
			continue
		}
		if m.Kind != tc.kind || m.Key() != tc.key || m.SessionID != tc.session {
			t.Errorf("Parse(%s) = kind %v key %q session %q", tc.in, m.Kind, m.Key(), m.SessionID)
		}
	}
}

func TestRegistry_chosenIDs(t *testing.T) {
	reg := newRegistry(t, Limits{})
	a := reg.NewConn(ConnOptions{ID: "server-1"})
	if err := a.Start(fakeAgent); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(nil); <-a.Done() })
	if err := reg.NewConn(ConnOptions{ID: "server-1"}).Start(fakeAgent); !errors.Is(err, ErrIDTaken) {
		t.Errorf("a second server-1: %v", err)
	}
	b, _ := startConn(t, reg, nil, nil)
	ids := []string{}
	for _, c := range reg.Conns() {
		ids = append(ids, c.ID())
	}
	want := []string{b.ID(), "server-1"}
	slices.Sort(ids)
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("Conns() = %v, want %v", ids, want)
	}
	a.Close(nil)
	<-a.Done()
	if cs := reg.Conns(); len(cs) != 1 || cs[0] != b {
		t.Errorf("Conns() after closing server-1 = %v", cs)
	}
}
