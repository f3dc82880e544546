package pairorder

import (
	"bytes"
	"fmt"
	"strconv"
)

// prompt is one prompt of a burst: where it stands, and what the driver
// saw of it (positions in the burst's stream of messages, 0 for not yet).
type prompt struct {
	session, pair int
	second        bool
	token         string // the mock echoes it as a chunk of its own
	ran           int    // its echo
	answered      int
}

// burst writes pairs pairs for each session in one write, then reads until
// every prompt is answered, and counts the pairs out of order.
func (d *driver) burst(sids []string, pairs int) error {
	byID := map[string]*prompt{}
	byToken := map[string]*prompt{}
	var order []*prompt
	var b bytes.Buffer
	for p := range pairs {
		for s, sid := range sids {
			for _, second := range []bool{false, true} {
				d.nextID++
				pr := &prompt{session: s, pair: p, second: second, token: fmt.Sprintf("r%ds%dp%d%s", d.round, s, p, half(second))}
				byID[strconv.Itoa(d.nextID)] = pr
				byToken[pr.token] = pr
				order = append(order, pr)
				fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`+"\n", d.nextID, sid, pr.token)
			}
		}
	}
	if _, err := d.in.Write(b.Bytes()); err != nil {
		return fmt.Errorf("sending round %d: %w", d.round, err)
	}
	if err := d.collect(byID, byToken); err != nil {
		return err
	}
	for i := 0; i < len(order); i += 2 {
		d.count(order[i], order[i+1])
	}
	return nil
}

func half(second bool) string {
	if second {
		return "b"
	}
	return "a"
}

// collect reads the bridge's messages until every prompt of the burst is
// answered, noting where each prompt's echo and response came.
func (d *driver) collect(byID, byToken map[string]*prompt) error {
	left := len(byID)
	pos := 0
	for m := range d.msgs {
		pos++
		if m.Method == "session/update" {
			d.noteUpdate(m, pos, byToken)
			continue
		}
		pr := byID[string(m.ID)]
		if m.Method != "" || pr == nil || pr.answered != 0 {
			continue
		}
		pr.answered = pos
		if m.Error != nil || m.Result.StopReason != "end_turn" {
			d.res.Failed++
		}
		if left--; left == 0 {
			return nil
		}
	}
	return fmt.Errorf("the bridge's output ended with %d prompts of round %d unanswered", left, d.round)
}

// noteUpdate notes the mock's echo of a prompt: it streams its answer
// word by word, and the prompt's token is a word of its own.
func (d *driver) noteUpdate(m message, pos int, byToken map[string]*prompt) {
	if m.Params.Update.SessionUpdate != "agent_message_chunk" {
		return
	}
	if pr := byToken[m.Params.Update.Content.Text]; pr != nil && pr.ran == 0 {
		pr.ran = pos
	}
}

// count counts the pair of first and second.
func (d *driver) count(first, second *prompt) {
	d.res.Pairs++
	bad := false
	if second.ran != 0 && (first.ran == 0 || second.ran < first.ran) {
		d.res.RanOutOfOrder++
		bad = true
	}
	if second.answered < first.answered {
		d.res.AnsweredOutOfOrder++
		bad = true
	}
	if second.ran != 0 && second.ran < first.answered {
		d.res.Overlapped++
		bad = true
	}
	if !bad {
		return
	}
	d.res.OutOfOrder++
	if d.res.First == "" {
		d.res.First = fmt.Sprintf("round %d session %d pair %d", d.round, first.session, first.pair)
	}
}
