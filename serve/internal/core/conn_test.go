package core_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
)

// startConn runs servetest.FakeAgent (or connect) on a connection whose messages
// all go to one Mailbox.
func startConn(t *testing.T, reg *core.Registry, connect core.Connector, detached func(string)) (*core.Conn, *core.Mailbox) {
	t.Helper()
	if connect == nil {
		connect = servetest.FakeAgent
	}
	var box *core.Mailbox
	c := reg.NewConn(core.ConnOptions{Agent: "test", Route: func(m core.Msg) { box.Push(m) }, Detached: detached})
	box = c.NewMailbox()
	if err := c.Start(connect); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(nil); <-c.Done() })
	return c, box
}

func TestConn_callAndRoute(t *testing.T) {
	reg := servetest.NewRegistry(t, core.Limits{})
	c, box := startConn(t, reg, nil, nil)
	res, err := c.Call(t.Context(), servetest.Msg(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`))
	if err != nil || res.Kind != core.Response || res.Key() != "n:0" {
		t.Fatalf("Call(initialize) = %+v, %v", res, err)
	}
	if err := c.Send(servetest.Msg(t, `{"jsonrpc":"2.0","id":"a","method":"session/new","params":{"cwd":"/"}}`)); err != nil {
		t.Fatal(err)
	}
	l := box.Acquire()
	if box.Acquire() != nil {
		t.Error("a second receiver acquired the mailbox")
	}
	m := servetest.Next(t, l)
	if m.Kind != core.Response || m.ResultSessionID != "s1" || m.Seq != 1 {
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
	reg := servetest.NewRegistry(t, core.Limits{})
	detached := make(chan string, 1)
	a, aBox := startConn(t, reg, nil, func(id string) { detached <- id })
	b, bBox := startConn(t, reg, nil, nil)
	a.Send(servetest.Msg(t, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`))
	servetest.Next(t, aBox.Acquire())
	b.Send(servetest.Msg(t, `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s1"}}`))
	lb := bBox.Acquire()
	servetest.Next(t, lb) // the replayed update
	if m := servetest.Next(t, lb); m.Kind != core.Response {
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
	b.Send(servetest.Msg(t, `{"jsonrpc":"2.0","id":2,"method":"session/close","params":{"sessionId":"s9"}}`))
	servetest.Next(t, lb)
	if !b.Attached("s1") {
		t.Error("closing another session detached s1")
	}
	b.Send(servetest.Msg(t, `{"jsonrpc":"2.0","id":3,"method":"session/close","params":{"sessionId":"s1"}}`))
	servetest.Next(t, lb)
	if b.Attached("s1") {
		t.Error("s1 is still attached after session/close")
	}
}

func TestConn_overflowDropsWithoutBlocking(t *testing.T) {
	reg := servetest.NewRegistry(t, core.Limits{MaxBuffered: 256 << 10})
	returned := make(chan error, 1)
	connect := func(ctx context.Context, r io.Reader, w io.Writer, agent string) error {
		err := servetest.FakeAgent(ctx, r, w, agent)
		returned <- err
		return err
	}
	c, _ := startConn(t, reg, connect, nil)
	c.Send(servetest.Msg(t, `{"jsonrpc":"2.0","id":1,"method":"flood","params":{"bytes":10000000}}`))
	select {
	case <-c.Done():
	case <-time.After(time.Minute):
		t.Fatal("the connection was not dropped")
	}
	<-returned
	// Overflowed, not stalled: the agent side's writes went on while
	// nobody read.
	if err := c.Err(); !errors.Is(err, core.ErrOverflow) {
		t.Errorf("Err() = %v, want ErrOverflow", err)
	}
	if reg.Get(c.ID()) != nil || reg.Len() != 0 {
		t.Error("the dropped connection is still registered")
	}
}

func TestConn_stalledDropped(t *testing.T) {
	reg := servetest.NewRegistry(t, core.Limits{MaxStall: 200 * time.Millisecond})
	c, _ := startConn(t, reg, nil, nil)
	c.Send(servetest.Msg(t, `{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}`))
	select {
	case <-c.Done():
	case <-time.After(time.Minute):
		t.Fatal("the stalled connection was not dropped")
	}
	if err := c.Err(); !errors.Is(err, core.ErrStalled) {
		t.Errorf("Err() = %v, want ErrStalled", err)
	}
}

func TestConn_readingIsNotStalled(t *testing.T) {
	reg := servetest.NewRegistry(t, core.Limits{MaxStall: 500 * time.Millisecond})
	c, box := startConn(t, reg, nil, nil)
	l := box.Acquire()
	for i := range 8 {
		c.Send(servetest.Msg(t, `{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}`))
		servetest.Next(t, l)
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
	reg := servetest.NewRegistry(t, core.Limits{MaxBuffered: 10 << 10})
	c, box := startConn(t, reg, nil, nil)
	c.Send(servetest.Msg(t, `{"jsonrpc":"2.0","id":1,"method":"flood","params":{"bytes":6000}}`))
	l := box.Acquire()
	for range 6 {
		servetest.Next(t, l)
	}
	if err := c.WaitRoom(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.Send(servetest.Msg(t, `{"jsonrpc":"2.0","id":2,"method":"flood","params":{"bytes":7000}}`))
	servetest.WaitFor(t, "the flood queued", func() bool { return box.Queued() == 9 }) // the first answer, 7 updates and the second
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := c.WaitRoom(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitRoom with 7 KB of 10 KB held = %v, want it to wait", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.WaitRoom(t.Context()) }()
	for range 4 {
		servetest.Next(t, l)
	}
	if err := <-done; err != nil {
		t.Errorf("WaitRoom once read = %v", err)
	}
}

func TestConn_closeEndsConnector(t *testing.T) {
	reg := servetest.NewRegistry(t, core.Limits{})
	c, box := startConn(t, reg, nil, nil)
	l := box.Acquire()
	c.Close(nil)
	<-c.Done()
	if _, err := l.Next(t.Context()); !errors.Is(err, core.ErrClosed) {
		t.Errorf("Next after Close = %v", err)
	}
	if err := c.Send(servetest.Msg(t, `{"jsonrpc":"2.0","id":1,"method":"echo"}`)); !errors.Is(err, core.ErrClosed) {
		t.Errorf("Send after Close = %v", err)
	}
	if _, err := c.Call(t.Context(), servetest.Msg(t, `{"jsonrpc":"2.0","id":1,"method":"echo"}`)); !errors.Is(err, core.ErrClosed) {
		t.Errorf("Call after Close = %v", err)
	}
}

func TestConn_connectorReturnDrains(t *testing.T) {
	reg := servetest.NewRegistry(t, core.Limits{})
	connect := func(ctx context.Context, r io.Reader, w io.Writer, agent string) error {
		io.WriteString(w, `{"jsonrpc":"2.0","method":"bye"}`+"\n")
		return nil
	}
	c, box := startConn(t, reg, connect, nil)
	<-c.Done()
	l := box.Acquire()
	if m := servetest.Next(t, l); m.Method != "bye" {
		t.Errorf("got %+v", m)
	}
	if _, err := l.Next(t.Context()); err != io.EOF {
		t.Errorf("Next after the end = %v, want io.EOF", err)
	}
	if !errors.Is(c.Err(), core.ErrEnded) {
		t.Errorf("Err() = %v", c.Err())
	}
}

func TestMailbox_replayAfter(t *testing.T) {
	reg := servetest.NewRegistry(t, core.Limits{})
	c := reg.NewConn(core.ConnOptions{})
	box := c.NewMailbox()
	box.Retain(1 << 20)
	for range 5 {
		box.Push(servetest.Msg(t, `{"jsonrpc":"2.0","method":"n"}`))
	}
	l := box.Acquire()
	for want := uint64(1); want <= 3; want++ {
		if m := servetest.Next(t, l); m.Seq != want {
			t.Fatalf("Seq %d, want %d", m.Seq, want)
		}
	}
	l.Release()
	l, err := box.AcquireAfter(1)
	if err != nil {
		t.Fatal(err)
	}
	for want := uint64(2); want <= 5; want++ {
		if m := servetest.Next(t, l); m.Seq != want {
			t.Fatalf("after resume: Seq %d, want %d", m.Seq, want)
		}
	}
	l.Release()
	box.Retain(len(`{"jsonrpc":"2.0","method":"n"}`))
	if _, err := box.AcquireAfter(2); !errors.Is(err, core.ErrReplayGap) {
		t.Errorf("AcquireAfter past what is kept = %v", err)
	}
	if _, err := box.AcquireAfter(4); err != nil {
		t.Errorf("AcquireAfter(4) = %v", err)
	}
}

func TestRegistry_closeAll(t *testing.T) {
	reg := core.NewRegistry(core.Limits{}, servetest.Logger())
	var cs []*core.Conn
	for range 3 {
		c, _ := startConn(t, reg, nil, nil)
		cs = append(cs, c)
	}
	if err := reg.CloseAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if !errors.Is(c.Err(), core.ErrShutdown) {
			t.Errorf("Err() = %v", c.Err())
		}
	}
	if err := reg.NewConn(core.ConnOptions{}).Start(servetest.FakeAgent); !errors.Is(err, core.ErrShutdown) {
		t.Errorf("Start after CloseAll = %v", err)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		kind    core.Kind
		key     string
		session string
		err     error
	}{
		{in: `{"jsonrpc":"2.0","id":1,"method":"x","params":{"sessionId":"a"}}`, kind: core.Request, key: "n:1", session: "a"},
		{in: `{"jsonrpc":"2.0","id":1.0,"result":{}}`, kind: core.Response, key: "n:1"},
		{in: `{"jsonrpc":"2.0","id":"1","error":{}}`, kind: core.Response, key: "s:1"},
		{in: `{"jsonrpc":"2.0","id":null,"method":"x"}`, kind: core.Request, key: "null"},
		{in: "{\n \"jsonrpc\": \"2.0\",\n \"method\": \"x\"\n}", kind: core.Notification},
		{in: `{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, kind: core.Other, key: "n:1"},
		{in: `{"jsonrpc":"1.0","id":1,"method":"x"}`, kind: core.Other, key: "n:1"},
		{in: `{"id":{},"method":"x"}`, kind: core.Other},
		{in: `[]`, err: core.ErrBatch},
		{in: `3`, err: core.ErrNotObject},
		{in: `{`, err: core.ErrInvalidJSON},
		{in: ``, err: core.ErrInvalidJSON},
	} {
		m, err := core.Parse([]byte(tc.in))
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
	reg := servetest.NewRegistry(t, core.Limits{})
	a := reg.NewConn(core.ConnOptions{ID: "server-1"})
	if err := a.Start(servetest.FakeAgent); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(nil); <-a.Done() })
	if err := reg.NewConn(core.ConnOptions{ID: "server-1"}).Start(servetest.FakeAgent); !errors.Is(err, core.ErrIDTaken) {
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
