// Package testkit holds the project's test support, and nothing else: no
// product package imports it. Its packages may import "testing".
//
// The fake model APIs, which the real agent CLIs are pointed at in
// end-to-end tests (and scripts/record and scripts/benchagent), named
// after the API they fake:
//
//	fakemessages   Anthropic's Messages API, for claude
//	fakeresponses  OpenAI's Responses API, for codex (and codex's home and config)
//	fakechat       OpenAI's Chat Completions API, for opencode (and its home and config)
//	directive      the one prompt vocabulary of the three ("run: <cmd>", "think", "todo", …)
//	fakehttp       the HTTP host the three share: a listener, request log, SSE writing
//	chunk          cutting text into the pieces a fake streams
//
// The harnesses the backends' tests share:
//
//	editor         the one editor harness: an ACP client over in-memory pipes to a
//	               bridge's server (the edge package's tests serve it theirs)
//	editortest     a bridge running backends behind the editor harness, and the
//	               end-to-end checks every agent must pass, run per agent (CheckCancelMidTurn,
//	               CheckCommandAsk, CheckOwnFork, CheckSharedServer, …)
//	nativetest     a backend's sessions through the Backend and Native interfaces: the one
//	               recorder of a session's events, prompt helpers, the re-exec'd fake CLI's
//	               installation and set-up, and the session checks every agent must pass
//	               (CheckOptionsAtOpen, CancelTurn, CheckCrashMidTurn, …), with the suite
//	               of a backend on one shared server that codex and opencode run (RunServerSuite)
//	sdkclient      the official ACP TypeScript SDK's unstable v1 client over stdio to a
//	               bridge in the test, opted into every capability, every message checked
//	               against the SDK's own schemas (the agents' e2e tests run it)
//	acptest        a session's updates rendered as a conversation, option helpers
//	golden         golden files and txtar transcripts (-update rewrites them)
//	toolbin        finding the pinned agent CLIs in .tools, skipping loudly without one
//	testproc       killing a process a test started (its process group on Unix), and whether
//	               one is alive, the same on every OS the tests build for
//
// And tests that are no one package's:
//
//	loadtest       many sessions on one bridge, and handoffs, with the real CLIs on fake models
package testkit
