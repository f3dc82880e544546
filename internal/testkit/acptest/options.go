package acptest

import "github.com/coder/acp-go-sdk"

// Choices lists each select config option's values by option id.
func Choices(opts []acp.SessionConfigOption) map[string][]string {
	out := map[string][]string{}
	for _, o := range opts {
		if o.Select == nil || o.Select.Options.Ungrouped == nil {
			continue
		}
		out[string(o.Select.Id)] = []string{}
		for _, c := range *o.Select.Options.Ungrouped {
			out[string(o.Select.Id)] = append(out[string(o.Select.Id)], string(c.Value))
		}
	}
	return out
}

// Current is each select config option's current value by option id.
func Current(opts []acp.SessionConfigOption) map[string]string {
	out := map[string]string{}
	for _, o := range opts {
		if o.Select != nil {
			out[string(o.Select.Id)] = string(o.Select.CurrentValue)
		}
	}
	return out
}
