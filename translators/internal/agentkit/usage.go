package agentkit

// MessagesUsage is a model request's token usage as Anthropic's Messages
// API gives it, which Claude Code's and Amp's stream-json pass on (in
// each assistant message, and Claude Code's in its result).
type MessagesUsage struct {
	InputTokens         int `json:"input_tokens"`
	OutputTokens        int `json:"output_tokens"`
	CacheReadTokens     int `json:"cache_read_input_tokens"`
	CacheCreationTokens int `json:"cache_creation_input_tokens"`
}

// Total is every token the request counted: input, output, and the
// input read from and written to the prompt cache.
func (u MessagesUsage) Total() int {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheCreationTokens
}
