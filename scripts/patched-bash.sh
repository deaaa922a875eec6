#!/usr/bin/env bash
# Finds, or installs with npm, the patched Bash of @openai/codex-shell-tool-mcp@0.97.0
# (docs/shell-tool.md §2.1) and prints its path. Never installs into the
# repository: the cache folder is ${TMPDIR:-/tmp}/codex-shell-tool-mcp-0.97.0, the
# one ../shared/realclient/mcp.sh --ref uses too.
#
#   scripts/patched-bash.sh            the patched Bash for this OS (one path)
#   scripts/patched-bash.sh --env      shell assignments for the tests and the bench:
#                                      CODEX_BASH_PATH, REF_MCP_SERVER, REF_EXECVE_WRAPPER,
#                                      REF_PKG_DIR and REF_SANDBOX_EXE (the last installs
#                                      @openai/codex@0.97.0 and links its binary as
#                                      codex-linux-sandbox, the helper the 0.97.0 server needs)
#   scripts/patched-bash.sh --sandbox-exe   only that helper's path
#
# The build is chosen as the package's own launcher does: /etc/os-release ID, then
# ID_LIKE, preferring a variant whose version is a prefix of VERSION_ID; the machine
# from `uname -m`. The chosen build must run here (`bash -c 'echo ok'`); when it does
# not (the ubuntu-24.04 build needs glibc 2.38), the other variants are tried in the
# launcher's order and the first that runs is taken, with a note on stderr.
#
# Exit status: 0 with the path(s) on stdout; 3 when npm or its registry cannot be
# reached (callers may skip: the message says why); 1 for any other failure.
# Environment: TMPDIR (cache root), REF_PKG_DIR (an unpacked package to use instead),
# OS_RELEASE (default /etc/os-release, for tests of the selection).
set -euo pipefail

VERSION=0.97.0
CACHE_ROOT=${TMPDIR:-/tmp}
OS_RELEASE=${OS_RELEASE:-/etc/os-release}
MODE=bash
case "${1:-}" in
  "") ;;
  --env) MODE=env ;;
  --sandbox-exe) MODE=sandbox ;;
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  *) echo "patched-bash.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
esac

die() { echo "patched-bash.sh: $*" >&2; exit 1; }
unreachable() { echo "patched-bash.sh: $*" >&2; exit 3; }

# npm_cache DIR MARKER PKG: install PKG into DIR unless DIR/MARKER exists. The install
# goes into a temporary sibling that is renamed under a lock, so concurrent test
# packages never see a half-installed folder.
npm_cache() {
  local dir=$1 marker=$2 pkg=$3
  [ -e "$dir/$marker" ] && return 0
  command -v npm >/dev/null || unreachable "npm is not installed: cannot fetch $pkg"
  command -v flock >/dev/null || die "flock is needed to install $pkg safely"
  mkdir -p "$(dirname "$dir")"
  local st=0
  (
    flock 9
    [ -e "$dir/$marker" ] && exit 0
    tmp=$(mktemp -d "$dir.tmp.XXXXXX")
    echo '{"private":true}' >"$tmp/package.json"
    echo "patched-bash.sh: installing $pkg into $dir ..." >&2
    if ! npm install --prefix "$tmp" --no-audit --no-fund --loglevel=error "$pkg" >&2; then
      rm -rf "$tmp"
      # tell an unreachable registry (callers skip) from a broken install (callers fail)
      if ! npm ping >/dev/null 2>&1; then exit 3; fi
      exit 1
    fi
    rm -rf "$dir" && mv "$tmp" "$dir"
  ) 9>"$dir.lock" || st=$?
  [ "$st" = 3 ] && unreachable "the npm registry cannot be reached: cannot install $pkg"
  [ "$st" = 0 ] || die "npm install of $pkg failed"
  [ -e "$dir/$marker" ] || die "$pkg installed, but $dir/$marker is missing"
}

case "$(uname -s)/$(uname -m)" in
  Linux/x86_64|Linux/amd64) TRIPLE=x86_64-unknown-linux-musl ;;
  Linux/aarch64|Linux/arm64) TRIPLE=aarch64-unknown-linux-musl ;;
  *) die "no patched Bash in the package for $(uname -s) $(uname -m) (Linux x86_64 or aarch64 only here)" ;;
esac

PKG=${REF_PKG_DIR:-}
if [ -z "$PKG" ]; then
  D=$CACHE_ROOT/codex-shell-tool-mcp-$VERSION
  npm_cache "$D" node_modules/@openai/codex-shell-tool-mcp/bin/mcp-server.js "@openai/codex-shell-tool-mcp@$VERSION"
  PKG=$D/node_modules/@openai/codex-shell-tool-mcp
fi
[ -d "$PKG/vendor/$TRIPLE/bash" ] || die "$PKG has no vendor/$TRIPLE/bash"

# The launcher's variant table, in its order: name, ids, version prefix.
VARIANTS=(
  "ubuntu-24.04 ubuntu 24.04"
  "ubuntu-22.04 ubuntu 22.04"
  "ubuntu-20.04 ubuntu 20.04"
  "debian-12 debian 12"
  "debian-11 debian 11"
  "centos-9 centos,rhel,rocky,almalinux 9"
)
osr() { # osr KEY: the value of KEY in os-release, quotes removed
  [ -r "$OS_RELEASE" ] || return 0
  sed -n "s/^$1=//p" "$OS_RELEASE" | head -n1 | sed 's/^"//; s/"$//'
}
ID=$(osr ID | tr 'A-Z' 'a-z'); ID_LIKE=$(osr ID_LIKE | tr 'A-Z' 'a-z'); VERSION_ID=$(osr VERSION_ID)
preferred="" any=""
for v in "${VARIANTS[@]}"; do
  read -r name ids ver <<<"$v"
  hit=0
  for i in ${ids//,/ }; do
    [ "$i" = "$ID" ] && hit=1
    for l in $ID_LIKE; do [ "$i" = "$l" ] && hit=1; done
  done
  [ "$hit" = 1 ] || continue
  [ -n "$any" ] || any=$name
  if [ -z "$preferred" ] && [ -n "$VERSION_ID" ] && [ "${VERSION_ID#"$ver"}" != "$VERSION_ID" ]; then preferred=$name; fi
done
choice=${preferred:-${any:-ubuntu-24.04}}   # the launcher falls back to the first variant

runs() { [ -x "$1" ] && [ "$(env -i PATH=/usr/bin:/bin "$1" --norc -c 'echo ok' 2>/dev/null)" = ok ]; }
BASH_PATH=$PKG/vendor/$TRIPLE/bash/$choice/bash
if ! runs "$BASH_PATH"; then
  found=""
  for v in "${VARIANTS[@]}"; do
    read -r name _ <<<"$v"
    if runs "$PKG/vendor/$TRIPLE/bash/$name/bash"; then found=$name; break; fi
  done
  [ -n "$found" ] || die "no patched Bash build of $PKG/vendor/$TRIPLE runs on this system (chose $choice for ID=$ID VERSION_ID=$VERSION_ID)"
  echo "patched-bash.sh: the $choice build does not run here; using $found" >&2
  BASH_PATH=$PKG/vendor/$TRIPLE/bash/$found/bash
fi

sandbox_exe() { # codex 0.97.0's binary, linked as codex-linux-sandbox
  local d=$CACHE_ROOT/codex-ref-$VERSION rel="node_modules/@openai/codex/vendor/$TRIPLE/codex/codex"
  npm_cache "$d" "$rel" "@openai/codex@$VERSION"
  mkdir -p "$d/sandbox-bin"
  [ "$(readlink "$d/sandbox-bin/codex-linux-sandbox" 2>/dev/null)" = "$d/$rel" ] \
    || { ln -sfn "$d/$rel" "$d/sandbox-bin/.link.$$" && mv -Tf "$d/sandbox-bin/.link.$$" "$d/sandbox-bin/codex-linux-sandbox"; }
  echo "$d/sandbox-bin/codex-linux-sandbox"
}

case "$MODE" in
  bash) echo "$BASH_PATH" ;;
  sandbox) sandbox_exe ;;
  env)
    SBX=$(sandbox_exe)
    q() { printf '%q' "$1"; }
    echo "CODEX_BASH_PATH=$(q "$BASH_PATH")"
    echo "REF_PKG_DIR=$(q "$PKG")"
    echo "REF_MCP_SERVER=$(q "$PKG/vendor/$TRIPLE/codex-exec-mcp-server")"
    echo "REF_EXECVE_WRAPPER=$(q "$PKG/vendor/$TRIPLE/codex-execve-wrapper")"
    echo "REF_SANDBOX_EXE=$(q "$SBX")"
    ;;
esac
