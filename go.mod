module github.com/acpbridge/acpbridge

go 1.26.0

require (
	github.com/coder/acp-go-sdk v0.13.5
	github.com/gofrs/flock v0.13.1
)

require (
	github.com/google/go-cmp v0.7.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
