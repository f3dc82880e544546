package agent

import (
	"slices"

	"github.com/coder/acp-go-sdk"
)

// FoldCompaction folds a compaction_update or compaction_summary_chunk
// into the compaction it is about, as the protocol says: an update's
// status replaces the compaction's, its summary (when set) replaces the
// whole summary and its error (when set) the error; a summary chunk
// appends, text joining the text before it. Its meta is the caller's to
// fold. The transcript and the web edges fold compactions with it.
func FoldCompaction(c *acp.SessionCompactionUpdate, u acp.SessionUpdate) {
	if up := u.CompactionUpdate; up != nil {
		c.Status = up.Status
		if up.Summary != nil {
			c.Summary = slices.Clone(up.Summary) // chunks append to it
		}
		if up.Error != nil {
			c.Error = up.Error
		}
		return
	}
	if ch := u.CompactionSummaryChunk; ch != nil {
		c.Summary = AppendBlock(c.Summary, ch.Content)
	}
}

// AppendBlock appends b to blocks, a text block joining the text block
// before it (as streamed chunks of one message join): that element of
// blocks is replaced, its text block left as it was.
func AppendBlock(blocks []acp.ContentBlock, b acp.ContentBlock) []acp.ContentBlock {
	if n := len(blocks); n > 0 && b.Text != nil && blocks[n-1].Text != nil {
		t := *blocks[n-1].Text
		t.Text += b.Text.Text
		blocks[n-1].Text = &t
		return blocks
	}
	return append(blocks, b)
}
