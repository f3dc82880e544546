package webtest

import (
	"strings"

	"github.com/acpbridge/acpbridge/serve/web"
	"github.com/coder/acp-go-sdk"
)

// AskWith is an open ask offering options (id:kind).
func AskWith(options ...string) *web.Ask {
	var req acp.RequestPermissionRequest
	for _, o := range options {
		id, kind, _ := strings.Cut(o, ":")
		req.Options = append(req.Options, acp.PermissionOption{OptionId: acp.PermissionOptionId(id), Name: id, Kind: acp.PermissionOptionKind(kind)})
	}
	return web.NewAsk("ask_1", req)
}

// OutcomeText is an outcome as "selected X" or "cancelled".
func OutcomeText(o acp.RequestPermissionOutcome) string {
	if o.Selected != nil {
		return "selected " + string(o.Selected.OptionId)
	}
	return "cancelled"
}
