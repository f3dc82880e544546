#!/usr/bin/env bash
# install-tools.sh installs the command-line tools that acpbridge's
# end-to-end tests drive into .tools/ (git-ignored), each pinned to a tested
# version, and prints where each one is. It installs a tool only if its
# binary is missing, so running it again is cheap.
#
# Tools:
#   acpx   a headless ACP client (npm), used by acpx_e2e_test.go
#
# Add an agent CLI by adding one line to main, e.g.
#   install_npm_tool some-cli 1.2.3 some-cli
set -euo pipefail

cd "$(dirname "$0")/.."

TOOLS_DIR=.tools

# install_npm_tool NAME VERSION [BIN]: installs npm package NAME@VERSION into
# .tools/NAME unless .tools/NAME/node_modules/.bin/BIN (BIN defaults to NAME)
# already exists, then prints the binary's path.
install_npm_tool() {
	local name=$1 version=$2 bin=${3:-$1}
	local prefix="$TOOLS_DIR/$name"
	local path="$prefix/node_modules/.bin/$bin"
	if [[ ! -x $path ]]; then
		command -v npm >/dev/null || {
			echo "install-tools: npm is needed to install $name" >&2
			return 1
		}
		echo "install-tools: installing $name@$version into $prefix" >&2
		npm install --prefix "$prefix" --no-audit --no-fund "$name@$version" >&2
		[[ -x $path ]] || {
			echo "install-tools: $name@$version installed no $path" >&2
			return 1
		}
	fi
	echo "$PWD/$path"
}

install_acpx() {
	install_npm_tool acpx 0.19.1
}

main() {
	install_acpx
}

main "$@"
