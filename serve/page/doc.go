// Package page is the chat page at / of acpbridge serve: plain HTML, CSS
// and ES modules in assets/, compiled in (no build step). It chats over
// POST /api/chat as the AI SDK's useChat does. Its files hold no secret,
// so the server serves them (Request) without the token; the page reads
// the token from its URL's fragment. pagejs_test.go runs its modules in
// headless Chromium (internal/pagetest drives it).
package page
