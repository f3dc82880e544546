// Package webtest is what the tests of the web edges (serve/web,
// serve/aisdk, serve/agui and the server's own in serve) share: a bridge
// on the mock agent served to in-process connections (bridge.go), the
// requests and readers of each protocol's streams (chat.go: the AI SDK's,
// agui.go: AG-UI's), the pinned npm libraries and the node scripts that
// run them against a server (script.go, its scripts in testdata), and the
// benchmarks' report of a turn's times (bench.go), the golden turns fed to
// a translator (golden.go) and asks made for a test (ask.go). Of the
// edges' packages it imports web only: web's own tests that use it are an
// external test package (web_test).
package webtest
