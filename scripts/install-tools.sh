#!/usr/bin/env bash
# install-tools.sh installs the command-line tools that acpbridge's
# end-to-end tests drive into .tools/ (git-ignored), each pinned to a tested
# version, and prints where each one is (only binary paths go to stdout). It
# installs a tool only if its binary is missing or the installed package is
# not the pinned version, so running it again is cheap.
#
# Tools:
#   acpx    a headless ACP client (npm), used by acpx_e2e_test.go
#   claude  the Claude Code CLI (npm @anthropic-ai/claude-code), used by the
#           Claude backend's end-to-end tests against internal/testkit/fakemessages
#   codex   the Codex CLI (npm @openai/codex), used by the Codex backend's
#           end-to-end tests against internal/testkit/fakeresponses; the
#           path printed is the native binary inside the package, which is
#           what the tests run (the npm wrapper only execs it)
#   opencode  the OpenCode CLI (npm opencode-ai), used by the OpenCode
#           backend's end-to-end tests against internal/testkit/fakechat;
#           the path printed is the native binary inside the package's
#           platform-specific optional dependency
#   amp     the Amp CLI (npm @ampcode/cli), used by the Amp backend's
#           end-to-end tests, offline (Amp runs its model on its own
#           servers): its version, the bridge's answer without a login, its
#           command lines and permission rules; the path printed is the
#           native binary of the platform-specific optional dependency
#   zed-claude-adapter  Zed's Claude ACP adapter (npm
#           @agentclientprotocol/claude-agent-acp), the "CL" anchor, into
#           .tools/claude-agent-acp: scripts/bench-agent.sh claude, and the ACP
#           proxy's end-to-end tests (translators/acpagent)
#   acp-codex-adapter  the ACP org's TypeScript Codex ACP adapter (npm
#           @agentclientprotocol/codex-acp), the "CXT" anchor, into
#           .tools/codex-acp: scripts/bench-agent.sh codex, and the ACP proxy's
#           end-to-end tests
#   acp-sdk  the ACP TypeScript SDK (npm @agentclientprotocol/sdk) with ws
#           (Node 20 has no WebSocket of its own), into .tools/acp-sdk: its
#           Streamable HTTP and WebSocket clients drive acpbridge serve's
#           /acp in serve's end-to-end tests (serve/acphttp/testdata/acpclient.mjs);
#           a library, so the path printed is the SDK's package directory
#   sandbox-agent  sandbox-agent's TypeScript SDK (npm sandbox-agent) and its
#           ACP-over-HTTP client (npm acp-http-client), into
#           .tools/sandbox-agent: they drive acpbridge serve's /v1 in serve's
#           end-to-end tests (serve/testdata/sandboxclient.mjs); the SDK's
#           optional dependency @sandbox-agent/cli brings the sandbox-agent
#           daemon, which scripts/bench-serve-sandbox.sh runs beside
#           acpbridge serve. A library, so the path printed is the SDK's
#           package directory
#   ai-sdk  the Vercel AI SDK (npm ai, with its peer zod) into .tools/ai-sdk:
#           the web edges' end-to-end tests (serve/internal/webtest/testdata/*.mjs) check
#           POST /api/chat with its own stream parser and chat core; a
#           library, so the path printed is its node_modules
#   ag-ui   AG-UI's client (npm @ag-ui/client and @ag-ui/core) into
#           .tools/ag-ui: the same tests run POST /ag-ui through HttpAgent;
#           a library, so the path printed is its node_modules
#
# Not installed by default (only a benchmark needs it; large):
#   zed-codex-adapter  Zed's Rust Codex ACP adapter (npm
#           @zed-industries/codex-acp), the "CXR" anchor, into
#           .tools/zed-codex-acp (scripts/bench-agent.sh codex)
#
# Not installed by default, because it changes the machine, not .tools
# (scripts/test.sh asks for it by name):
#   chromium  Debian's chromium-headless-shell package (apt), the real
#           browser serve/internal/pagetest drives; apt-get installs it when
#           it is missing and this script runs as root or with
#           passwordless sudo, else it says how and fails. The path printed
#           is the binary found ($CHROMIUM_BIN, then the PATH). Not pinned:
#           Debian's security archive keeps only the newest build.
#
# With arguments, installs only the named tools, e.g.
#   bash scripts/install-tools.sh zed-claude-adapter
#
# With --latest first, installs the newest version the npm registry serves
# (its latest tag) instead of the pinned one, into .tools-latest/
# (git-ignored), and prints NAME_BIN=path lines instead of bare paths, for
# the end-to-end tests' CLAUDE_BIN, CODEX_BIN, OPENCODE_BIN and AMP_BIN.
# Only the four agent CLIs can be installed so, and with no names it
# installs those four:
#   bash scripts/install-tools.sh --latest            # claude codex opencode amp
#   bash scripts/install-tools.sh --latest claude
# scripts/test.sh --latest runs the end-to-end tests with them.
#
# Add an agent CLI by adding one line to main, e.g.
#   install_npm_tool some-cli 1.2.3 some-cli
set -euo pipefail

cd "$(dirname "$0")/.."

TOOLS_DIR=.tools
LATEST=0
if [[ ${1:-} == --latest ]]; then
	LATEST=1
	TOOLS_DIR=.tools-latest
	shift
fi

# version_of PACKAGE PINNED prints the version to install: PINNED, or with
# --latest the version of PACKAGE's latest tag on the npm registry.
version_of() {
	if ((LATEST == 0)); then
		echo "$2"
		return
	fi
	local v
	v=$(npm view "$1@latest" version 2>/dev/null) || true
	if [[ -z $v ]]; then
		echo "install-tools: npm view $1@latest version printed nothing (is the registry reachable?)" >&2
		return 1
	fi
	echo "$v"
}

# installed_version PREFIX PACKAGE prints the "version" of
# PREFIX/node_modules/PACKAGE/package.json, or nothing if there is none.
installed_version() {
	local pkg_json="$1/node_modules/$2/package.json"
	[[ -f $pkg_json ]] || return 0
	sed -n 's/^[[:space:]]*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$pkg_json" | head -n 1
}

# install_npm_tool NAME VERSION [BIN [DIR]]: installs npm package NAME@VERSION
# into .tools/DIR (DIR defaults to NAME; give one for scoped names such as
# @scope/pkg) unless .tools/DIR/node_modules/.bin/BIN (BIN defaults to NAME)
# already exists and the installed package is VERSION, then prints the
# binary's path.
install_npm_tool() {
	local name=$1 version=$2 bin=${3:-$1} dir=${4:-$1}
	local prefix="$TOOLS_DIR/$dir"
	local path="$prefix/node_modules/.bin/$bin"
	local have
	have=$(installed_version "$prefix" "$name")
	if [[ ! -x $path || $have != "$version" ]]; then
		command -v npm >/dev/null || {
			echo "install-tools: npm is needed to install $name" >&2
			return 1
		}
		if [[ -n $have ]]; then
			echo "install-tools: replacing $name@$have in $prefix with $name@$version" >&2
		else
			echo "install-tools: installing $name@$version into $prefix" >&2
		fi
		npm install --prefix "$prefix" --no-audit --no-fund --save-exact "$name@$version" >&2
		[[ -x $path ]] || {
			echo "install-tools: $name@$version installed no $path" >&2
			return 1
		}
		have=$(installed_version "$prefix" "$name")
		[[ $have == "$version" ]] || {
			echo "install-tools: $prefix has $name@${have:-nothing}, want $version" >&2
			return 1
		}
	fi
	echo "$PWD/$path"
}

# install_npm_lib DIR PACKAGE@VERSION...: installs npm packages that have
# no command (libraries the tests' node scripts import) into .tools/DIR
# unless every one is there at its version, then prints the path of
# .tools/DIR/node_modules.
install_npm_lib() {
	local dir=$1
	shift
	local prefix="$TOOLS_DIR/$dir" spec name version need=0
	for spec in "$@"; do
		name=${spec%@*} version=${spec##*@}
		[[ $(installed_version "$prefix" "$name") == "$version" ]] || need=1
	done
	if ((need == 1)); then
		command -v npm >/dev/null || {
			echo "install-tools: npm is needed to install $*" >&2
			return 1
		}
		echo "install-tools: installing $* into $prefix" >&2
		npm install --prefix "$prefix" --no-audit --no-fund --save-exact "$@" >&2
		for spec in "$@"; do
			name=${spec%@*} version=${spec##*@}
			[[ $(installed_version "$prefix" "$name") == "$version" ]] || {
				echo "install-tools: $prefix has $name@$(installed_version "$prefix" "$name"), want $version" >&2
				return 1
			}
		done
	fi
	echo "$PWD/$prefix/node_modules"
}

# need_native PACKAGE PATH fails, saying why, unless PATH, the native
# binary that the installed PACKAGE's optional dependency for this
# platform ships, is there.
need_native() {
	[[ -x $2 ]] && return 0
	echo "install-tools: $1 is installed but the native binary $2 is not" >&2
	echo "install-tools: (is the optional dependency for this platform missing? npm must not run with --omit=optional)" >&2
	return 1
}

# npm_platform TOOL prints this machine's platform as npm packages of
# native binaries name it (linux-x64, darwin-arm64, ...).
npm_platform() {
	case "$(uname -s)-$(uname -m)" in
	Linux-x86_64) echo linux-x64 ;;
	Linux-aarch64 | Linux-arm64) echo linux-arm64 ;;
	Darwin-x86_64) echo darwin-x64 ;;
	Darwin-arm64) echo darwin-arm64 ;;
	*)
		echo "install-tools: no native $1 binary known for $(uname -s)-$(uname -m)" >&2
		return 1
		;;
	esac
}

install_acpx() {
	install_npm_tool acpx 0.19.1
}

# install_claude installs the Claude Code CLI into .tools/claude. The npm
# package is a thin wrapper around a native binary that comes from a
# platform-specific optional dependency, so check that it actually runs.
install_claude() {
	local version path
	version=$(version_of @anthropic-ai/claude-code 2.1.197) || return 1
	path=$(install_npm_tool @anthropic-ai/claude-code "$version" claude claude)
	local got
	got=$(DISABLE_AUTOUPDATER=1 "$path" --version 2>/dev/null | head -n 1) || true
	if [[ $got != "$version"* ]]; then
		# The package's postinstall (install.cjs) replaces the bin/claude.exe
		# placeholder with the native binary; run it if npm skipped it.
		echo "install-tools: claude --version printed '${got}'; running the package's install.cjs" >&2
		(cd "$TOOLS_DIR/claude/node_modules/@anthropic-ai/claude-code" && node install.cjs) >&2 || true
		got=$(DISABLE_AUTOUPDATER=1 "$path" --version 2>/dev/null | head -n 1) || true
	fi
	if [[ $got != "$version"* ]]; then
		echo "install-tools: $path --version printed '${got}', want $version" >&2
		echo "install-tools: (is the optional dependency for this platform missing? npm must not run with --omit=optional)" >&2
		return 1
	fi
	echo "$path"
}

# install_codex installs the Codex CLI into .tools/codex and prints the path
# of its native binary. The npm package's bin/codex.js only sets two
# environment variables and execs the binary that the platform-specific
# optional dependency @openai/codex-linux-x64 (an alias of
# @openai/codex@VERSION-linux-x64) unpacks under vendor/.
install_codex() {
	local version wrapper
	version=$(version_of @openai/codex 0.169.0) || return 1
	wrapper=$(install_npm_tool @openai/codex "$version" codex codex)
	local target
	case "$(uname -s)-$(uname -m)" in
	Linux-x86_64) target=linux-x64/vendor/x86_64-unknown-linux-musl ;;
	Linux-aarch64 | Linux-arm64) target=linux-arm64/vendor/aarch64-unknown-linux-musl ;;
	Darwin-x86_64) target=darwin-x64/vendor/x86_64-apple-darwin ;;
	Darwin-arm64) target=darwin-arm64/vendor/aarch64-apple-darwin ;;
	*)
		echo "install-tools: no native codex binary known for $(uname -s)-$(uname -m)" >&2
		return 1
		;;
	esac
	local path="$TOOLS_DIR/codex/node_modules/@openai/codex-${target%%/*}/${target#*/}/bin/codex"
	need_native "$wrapper" "$path" || return 1
	# A bare `codex --version` leaves a helper entry under ~/.codex/tmp;
	# with HOME and CODEX_HOME pointing at nothing it writes no files.
	local got scratch
	scratch=$(mktemp -d)
	got=$(HOME="$scratch" CODEX_HOME="$scratch/none" TMPDIR="$scratch" "$path" --version 2>/dev/null | head -n 1) || true
	rm -rf "$scratch"
	if [[ $got != "codex-cli $version" ]]; then
		echo "install-tools: $path --version printed '${got}', want $version" >&2
		return 1
	fi
	echo "$PWD/$path"
}

# install_opencode installs the OpenCode CLI into .tools/opencode and prints
# the path of its native binary: the Bun single-file executable that the
# platform-specific optional dependency (opencode-linux-x64, …) ships in
# its bin/. The package's postinstall hard-links it to the wrapper's
# bin/opencode.exe and runs it with --version; the tests run the
# dependency's copy directly.
install_opencode() {
	local version pkg
	version=$(version_of opencode-ai 1.18.33) || return 1
	pkg=opencode-$(npm_platform opencode) || return 1
	# Any run of opencode, even --version (≈1 s), creates its directories
	# under the XDG base directories and TMPDIR; point them at a scratch
	# directory, for the postinstall's run too.
	local scratch wrapper got
	scratch=$(mktemp -d)
	wrapper=$(XDG_CONFIG_HOME="$scratch/config" XDG_DATA_HOME="$scratch/data" XDG_CACHE_HOME="$scratch/cache" \
		XDG_STATE_HOME="$scratch/state" TMPDIR="$scratch" install_npm_tool opencode-ai "$version" opencode opencode) || {
		rm -rf "$scratch"
		return 1
	}
	local path="$TOOLS_DIR/opencode/node_modules/$pkg/bin/opencode"
	need_native "$wrapper" "$path" || {
		rm -rf "$scratch"
		return 1
	}
	got=$(HOME="$scratch" XDG_CONFIG_HOME="$scratch/config" XDG_DATA_HOME="$scratch/data" \
		XDG_CACHE_HOME="$scratch/cache" XDG_STATE_HOME="$scratch/state" TMPDIR="$scratch" \
		OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 \
		"$path" --version 2>/dev/null | head -n 1) || true
	rm -rf "$scratch"
	if [[ $got != "$version" ]]; then
		echo "install-tools: $path --version printed '${got}', want $version" >&2
		return 1
	fi
	echo "$PWD/$path"
}

# amp_version PLATFORM_PACKAGE prints the amp version to install: the
# pinned one, or with --latest the newest that ships a native binary for
# this platform (PLATFORM_PACKAGE's latest tag). @ampcode/cli's own latest
# tag can run ahead of it: 0.0.1790712063-gb89205 (2026-09-29) names a
# cli-linux-x64 of its version that the registry does not have.
amp_version() {
	local pinned=0.0.1790142911-g7618fb
	((LATEST == 1)) || {
		echo "$pinned"
		return
	}
	local v top
	v=$(version_of "$1" "$pinned") || return 1
	top=$(version_of @ampcode/cli "$pinned") || return 1
	[[ $top == "$v" ]] || echo "install-tools: @ampcode/cli@latest is $top, but the newest $1 is $v; installing amp $v" >&2
	echo "$v"
}

# install_amp installs the Amp CLI into .tools/amp and prints the path of
# its native binary (the Bun executable of @ampcode/cli-<platform>). The
# package's latest tag once installed only a stub (no native binary), so
# the version is pinned; with --latest, need_native says so if it does again.
# Amp writes its logs and device id under the XDG directories even for
# --version; they point at a scratch directory here.
install_amp() {
	local version pkg
	pkg=cli-$(npm_platform amp) || return 1
	version=$(amp_version "@ampcode/$pkg") || return 1
	install_npm_tool @ampcode/cli "$version" amp amp >/dev/null || return 1
	local path="$TOOLS_DIR/amp/node_modules/@ampcode/$pkg/amp"
	need_native @ampcode/cli "$path" || return 1
	local scratch got
	scratch=$(mktemp -d)
	got=$(HOME="$scratch" XDG_CONFIG_HOME="$scratch/config" XDG_DATA_HOME="$scratch/data" \
		XDG_CACHE_HOME="$scratch/cache" AMP_SKIP_UPDATE_CHECK=1 "$path" --version </dev/null 2>/dev/null | head -n 1) || true
	rm -rf "$scratch"
	if [[ $got != "$version"* ]]; then
		echo "install-tools: $path --version printed '${got}', want $version" >&2
		return 1
	fi
	echo "$PWD/$path"
}

# install_zed_claude_adapter installs Zed's Claude ACP adapter into
# .tools/claude-agent-acp. It runs Claude Code through the Claude Agent SDK,
# which bundles its own native CLI (an optional dependency);
# scripts/bench-agent.sh claude points it at the pinned .tools claude instead.
install_zed_claude_adapter() {
	install_npm_tool @agentclientprotocol/claude-agent-acp 0.100.0 claude-agent-acp claude-agent-acp
}

# install_zed_codex_adapter installs Zed's Codex ACP adapter into
# .tools/zed-codex-acp: a Rust binary (from a platform-specific optional
# dependency) that links codex-core itself and runs no codex executable.
install_zed_codex_adapter() {
	install_npm_tool @zed-industries/codex-acp 0.16.0 codex-acp zed-codex-acp
}

# install_acp_codex_adapter installs the ACP org's Codex ACP adapter into
# .tools/codex-acp. It drives `codex app-server`; it bundles its own
# @openai/codex, and scripts/bench-agent.sh codex points it at the pinned .tools
# codex instead ($CODEX_PATH).
install_acp_codex_adapter() {
	install_npm_tool @agentclientprotocol/codex-acp 2.6.0 codex-acp codex-acp
}

# chromium_path prints the headless Chromium the browser test would run:
# $CHROMIUM_BIN, else the binary of Debian's package (its
# /usr/bin/chromium-headless-shell is a script that runs it as a child),
# else chromium-headless-shell on the PATH; nothing if there is none.
chromium_path() {
	if [[ -n ${CHROMIUM_BIN:-} ]]; then
		echo "$CHROMIUM_BIN"
		return
	fi
	local p
	for p in /usr/lib/chromium/chromium-headless-shell "$(command -v chromium-headless-shell || true)"; do
		[[ -n $p && -x $p ]] && {
			echo "$p"
			return
		}
	done
	return 0
}

# as_root runs a command as root: directly when this script is root, else
# through passwordless sudo; it fails, without asking for a password, when
# neither can.
as_root() {
	if ((EUID == 0)); then
		"$@"
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo -n "$@"
	else
		return 1
	fi
}

# install_chromium installs Debian's chromium-headless-shell with apt-get
# unless a headless Chromium is already there (chromium_path), and prints
# its path. apt's package, not a browser a tool downloads itself: it comes
# from the distribution's archive (those downloads are not reachable
# everywhere the tests run), with its libraries, and its security updates.
install_chromium() {
	local path
	path=$(chromium_path)
	if [[ -z $path ]]; then
		if ! command -v apt-get >/dev/null; then
			echo "install-tools: no headless Chromium here and no apt-get to install Debian's chromium-headless-shell; install Chromium (or Chrome) and set CHROMIUM_BIN to it" >&2
			return 1
		fi
		echo "install-tools: installing chromium-headless-shell with apt-get" >&2
		if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium-headless-shell >&2; then
			as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 &&
				as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium-headless-shell >&2 || {
				echo "install-tools: could not install chromium-headless-shell (this needs root or passwordless sudo): run" >&2
				echo "install-tools:   sudo apt-get install chromium-headless-shell" >&2
				echo "install-tools: or set CHROMIUM_BIN to a Chromium or Chrome" >&2
				return 1
			}
		fi
		path=$(chromium_path)
	fi
	[[ -n $path && -x $path ]] || {
		echo "install-tools: chromium-headless-shell is installed but no binary was found (PATH, /usr/lib/chromium)" >&2
		return 1
	}
	echo "$path"
}

# install_ai_sdk installs the AI SDK (ai 7.x; zod is its peer dependency)
# into .tools/ai-sdk.
install_ai_sdk() {
	install_npm_lib ai-sdk ai@7.0.173 zod@4.6.7
}

# install_ag_ui installs AG-UI's client and core (1.0) into .tools/ag-ui.
install_ag_ui() {
	install_npm_lib ag-ui @ag-ui/client@1.0.0 @ag-ui/core@1.0.0
}

# install_acp_sdk installs @agentclientprotocol/sdk and ws into
# .tools/acp-sdk unless both are there at their pinned versions, and
# prints the SDK's package directory. Neither has a binary to check, so
# the versions are.
install_acp_sdk() {
	local prefix="$TOOLS_DIR/acp-sdk" sdk=2.4.0 ws=8.23.0
	local dir="$prefix/node_modules/@agentclientprotocol/sdk"
	if [[ $(installed_version "$prefix" @agentclientprotocol/sdk) != "$sdk" || $(installed_version "$prefix" ws) != "$ws" ]]; then
		command -v npm >/dev/null || {
			echo "install-tools: npm is needed to install @agentclientprotocol/sdk" >&2
			return 1
		}
		echo "install-tools: installing @agentclientprotocol/sdk@$sdk and ws@$ws into $prefix" >&2
		npm install --prefix "$prefix" --no-audit --no-fund --save-exact "@agentclientprotocol/sdk@$sdk" "ws@$ws" >&2
		local have
		for pkg in "@agentclientprotocol/sdk $sdk" "ws $ws"; do
			set -- $pkg
			have=$(installed_version "$prefix" "$1")
			[[ $have == "$2" ]] || {
				echo "install-tools: $prefix has $1@${have:-nothing}, want $2" >&2
				return 1
			}
		done
	fi
	echo "$PWD/$dir"
}

# install_sandbox_agent installs sandbox-agent and acp-http-client into
# .tools/sandbox-agent unless both are there at their pinned versions, and
# prints the SDK's package directory. Neither has a binary to check, so the
# versions are; the daemon binary (an optional dependency, for the
# benchmark only) is reported if it is missing, not required.
install_sandbox_agent() {
	local prefix="$TOOLS_DIR/sandbox-agent" version=0.4.2
	local dir="$prefix/node_modules/sandbox-agent"
	if [[ $(installed_version "$prefix" sandbox-agent) != "$version" || $(installed_version "$prefix" acp-http-client) != "$version" ]]; then
		command -v npm >/dev/null || {
			echo "install-tools: npm is needed to install sandbox-agent" >&2
			return 1
		}
		echo "install-tools: installing sandbox-agent@$version and acp-http-client@$version into $prefix" >&2
		npm install --prefix "$prefix" --no-audit --no-fund --save-exact "sandbox-agent@$version" "acp-http-client@$version" >&2
		local have pkg
		for pkg in sandbox-agent acp-http-client; do
			have=$(installed_version "$prefix" "$pkg")
			[[ $have == "$version" ]] || {
				echo "install-tools: $prefix has $pkg@${have:-nothing}, want $version" >&2
				return 1
			}
		done
	fi
	[[ -x $prefix/node_modules/.bin/sandbox-agent ]] ||
		echo "install-tools: note: no sandbox-agent daemon in $prefix (its optional dependency @sandbox-agent/cli); only scripts/bench-serve-sandbox.sh needs it" >&2
	echo "$PWD/$dir"
}

# main_latest installs the named agent CLIs (all four without names) at
# their newest versions into .tools-latest, and prints NAME_BIN=path for
# each.
main_latest() {
	local tools=("$@") tool path
	((${#tools[@]} > 0)) || tools=(claude codex opencode amp)
	for tool in "${tools[@]}"; do
		case $tool in
		claude | codex | opencode | amp) path=$("install_$tool") || return 1 ;;
		*)
			echo "install-tools: --latest installs only claude, codex, opencode and amp, not $tool" >&2
			return 2
			;;
		esac
		echo "install-tools: newest $tool: $(installed_version "$TOOLS_DIR/$tool" "$(npm_package "$tool")")" >&2
		echo "${tool^^}_BIN=$path"
	done
}

# npm_package TOOL prints the npm package of an agent CLI.
npm_package() {
	case $1 in
	claude) echo @anthropic-ai/claude-code ;;
	codex) echo @openai/codex ;;
	opencode) echo opencode-ai ;;
	amp) echo @ampcode/cli ;;
	esac
}

main() {
	if ((LATEST == 1)); then
		main_latest "$@"
		return
	fi
	if (($# > 0)); then
		local tool
		for tool in "$@"; do
			case $tool in
			acpx) install_acpx ;;
			claude) install_claude ;;
			codex) install_codex ;;
			opencode) install_opencode ;;
			amp) install_amp ;;
			zed-claude-adapter | claude-agent-acp) install_zed_claude_adapter ;;
			zed-codex-adapter) install_zed_codex_adapter ;;
			acp-codex-adapter) install_acp_codex_adapter ;;
			acp-sdk) install_acp_sdk ;;
			sandbox-agent) install_sandbox_agent ;;
			ai-sdk) install_ai_sdk ;;
			ag-ui) install_ag_ui ;;
			chromium) install_chromium ;;
			*)
				echo "install-tools: unknown tool $tool (acpx, claude, codex, opencode, amp, zed-claude-adapter, zed-codex-adapter, acp-codex-adapter, acp-sdk, sandbox-agent, ai-sdk, ag-ui, chromium)" >&2
				return 2
				;;
			esac
		done
		return
	fi
	install_acpx
	install_claude
	install_codex
	install_opencode
	install_amp
	install_zed_claude_adapter
	install_acp_codex_adapter
	install_acp_sdk
	install_sandbox_agent
	install_ai_sdk
	install_ag_ui
}

main "$@"
