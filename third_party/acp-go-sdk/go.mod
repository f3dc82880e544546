module github.com/coder/acp-go-sdk

go 1.21
