module github.com/acpbridge/acpbridge

go 1.26.0

require (
	github.com/acpbridge/acpbridge/third_party/acpv2 v0.0.0
	github.com/aymanbagabas/go-udiff v0.4.2
	github.com/chromedp/cdproto v0.159.0
	github.com/chromedp/chromedp v0.23.0
	github.com/coder/acp-go-sdk v0.13.5
	github.com/coder/websocket v1.8.15
	github.com/creachadair/jrpc2 v1.3.6
	github.com/gofrs/flock v0.13.1
	github.com/google/go-cmp v0.7.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2
	github.com/spf13/pflag v1.0.10
	github.com/tmaxmax/go-sse v0.12.0
	golang.org/x/sync v0.24.0
	golang.org/x/sys v0.49.0
	golang.org/x/tools v0.52.0
)

require (
	github.com/creachadair/mds v0.31.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	golang.org/x/text v0.14.0 // indirect
)

replace github.com/coder/acp-go-sdk => ./third_party/acp-go-sdk

replace github.com/acpbridge/acpbridge/third_party/acpv2 => ./third_party/acpv2
