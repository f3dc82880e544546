// Package pairorder sends bursts of prompt pairs to a bridge on the mock
// agent and counts the pairs that came back out of order. A pair is two
// session/prompt requests written back to back for one session; the bridge
// must run them in that order and answer them in that order. The acp
// package's stress test drives it over in-memory pipes, and
// scripts/orderstress against the built binary.
package pairorder

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// Config is one stress run's shape: Rounds bursts, each of Pairs pairs for
// each of Sessions sessions, written at once.
type Config struct {
	Sessions int
	Pairs    int
	Rounds   int
}

// Result counts what a run saw. A pair is counted at most once per kind.
type Result struct {
	Pairs int
	// OutOfOrder counts the pairs of any of the three kinds below.
	OutOfOrder int
	// RanOutOfOrder: the mock's answer to the second prompt streamed
	// before its answer to the first.
	RanOutOfOrder int
	// AnsweredOutOfOrder: the second prompt's response came first.
	AnsweredOutOfOrder int
	// Overlapped: the mock's answer to the second prompt streamed before
	// the first prompt's response.
	Overlapped int
	// Failed: a prompt answered with an error or a stop other than end_turn.
	Failed int
	// First is the first pair out of order, as "round r session s pair p".
	First string
}

func (r Result) String() string {
	return fmt.Sprintf("%d pairs, %d out of order: %d ran out of order, %d answered out of order, %d overlapped; %d prompts failed%s",
		r.Pairs, r.OutOfOrder, r.RanOutOfOrder, r.AnsweredOutOfOrder, r.Overlapped, r.Failed, firstNote(r.First))
}

func firstNote(first string) string {
	if first == "" {
		return ""
	}
	return " (first: " + first + ")"
}

// Run drives a bridge that reads in and writes out: it initializes it,
// opens the sessions and sends the rounds, each once the last is answered.
func Run(in io.Writer, out io.Reader, cfg Config) (Result, error) {
	d := &driver{in: in, msgs: make(chan message, 1024)}
	var reader sync.WaitGroup
	reader.Go(func() { d.read(out) })
	defer reader.Wait()
	defer func() {
		for range d.msgs { // let the reader finish once out ends
		}
	}()
	res, err := d.run(cfg)
	if c, ok := in.(io.Closer); ok {
		c.Close()
	}
	return res, err
}

// Hog keeps n goroutines busy, preemptibly, until the returned stop is
// called (which waits for them).
func Hog(n int) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for i := 0; !done.Load(); i++ {
				_ = fmt.Sprint(i)
			}
		})
	}
	return func() { done.Store(true); wg.Wait() }
}

// message is the part of a line from the bridge the driver reads.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result struct {
		SessionID  string `json:"sessionId"`
		StopReason string `json:"stopReason"`
	} `json:"result"`
	Error  json.RawMessage `json:"error"`
	Params struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate string `json:"sessionUpdate"`
			Content       struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"update"`
	} `json:"params"`
}

type driver struct {
	in     io.Writer
	msgs   chan message
	nextID int
	res    Result
	round  int
}

func (d *driver) read(out io.Reader) {
	defer close(d.msgs)
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m message
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			d.msgs <- m
		}
	}
}

func (d *driver) run(cfg Config) (Result, error) {
	if _, err := d.call(`"initialize"`, `{"protocolVersion":1}`); err != nil {
		return d.res, err
	}
	sids := make([]string, cfg.Sessions)
	for i := range sids {
		m, err := d.call(`"session/new"`, `{"cwd":"/tmp","mcpServers":[]}`)
		if err != nil {
			return d.res, err
		}
		sids[i] = m.Result.SessionID
	}
	for d.round = range cfg.Rounds {
		if err := d.burst(sids, cfg.Pairs); err != nil {
			return d.res, err
		}
	}
	return d.res, nil
}

// call sends one request and waits for its response.
func (d *driver) call(method, params string) (message, error) {
	d.nextID++
	id := d.nextID
	if _, err := fmt.Fprintf(d.in, `{"jsonrpc":"2.0","id":%d,"method":%s,"params":%s}`+"\n", id, method, params); err != nil {
		return message{}, fmt.Errorf("sending %s: %w", method, err)
	}
	for m := range d.msgs {
		if m.Method == "" && string(m.ID) == fmt.Sprint(id) {
			if m.Error != nil {
				return m, fmt.Errorf("%s answered %s", method, m.Error)
			}
			return m, nil
		}
	}
	return message{}, fmt.Errorf("the bridge's output ended before %s was answered", method)
}
