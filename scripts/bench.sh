#!/usr/bin/env bash
# Side-by-side benchmark of our exec-server against the reference
# `codex exec-server` 0.169.0 (docs: docs/benchmarking.md; driver: ./cmd/codex-bench).
#
#   scripts/bench.sh [bench flags...]      e.g. scripts/bench.sh -quick -md out.md -json out.json
#
# Environment:
#   CODEX_REF   path of a reference codex 0.169.0 binary. Default: installed with
#               npm into ${TMPDIR:-/tmp}/codex-ref-0.169.0 when missing (about 6 s,
#               400 MB), never into the repository.
#   OURS        our binary (default: bin/codex, built with `go build -o bin/codex .`
#               when missing).
# The mcp group (our MCP shell server vs @openai/codex-shell-tool-mcp@0.97.0) gets
# the patched Bash, the reference server and wrapper, and codex 0.97.0's
# codex-linux-sandbox from scripts/patched-bash.sh --env (npm, outside the
# repository); when that fails the group reports why and measures nothing.
# The proxy group (the managed network proxy, ours vs the reference, in a
# network test bed of its own) makes network and mount namespaces and needs
# root; without it the group reports why and measures nothing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CODEX_VERSION=0.169.0

# npm_cache DIR MARKER PKG...: install PKG... into DIR unless DIR/MARKER exists
# (into a temporary sibling, renamed under a lock, so parallel runs are safe).
npm_cache() {
  local dir=$1 marker=$2; shift 2
  [ -e "$dir/$marker" ] && return 0
  command -v npm >/dev/null || { echo "bench.sh: npm is needed to install the reference (or set CODEX_REF)" >&2; return 1; }
  mkdir -p "$(dirname "$dir")"
  (
    flock 9
    [ -e "$dir/$marker" ] && exit 0
    tmp=$(mktemp -d "$dir.tmp.XXXXXX")
    echo '{"private":true}' >"$tmp/package.json"
    echo "bench.sh: installing $* into $dir ..." >&2
    if ! npm install --prefix "$tmp" --no-audit --no-fund --loglevel=error "$@" >&2; then
      rm -rf "$tmp"; exit 1
    fi
    rm -rf "$dir" && mv "$tmp" "$dir"
  ) 9>"$dir.lock"
  [ -e "$dir/$marker" ]
}

REF=${CODEX_REF:-}
if [ -z "$REF" ]; then
  case "$(uname -m)" in
    x86_64|amd64) REL=node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex ;;
    aarch64|arm64) REL=node_modules/@openai/codex-linux-arm64/vendor/aarch64-unknown-linux-musl/bin/codex ;;
    *) echo "bench.sh: unsupported machine $(uname -m); set CODEX_REF" >&2; exit 1 ;;
  esac
  DIR=${TMPDIR:-/tmp}/codex-ref-$CODEX_VERSION
  npm_cache "$DIR" "$REL" "@openai/codex@$CODEX_VERSION" || { echo "bench.sh: could not install the reference" >&2; exit 1; }
  REF=$DIR/$REL
fi
[ -x "$REF" ] || { echo "bench.sh: reference binary $REF is not executable" >&2; exit 1; }

OURS=${OURS:-bin/codex}
if [ ! -x "$OURS" ] && [ "$OURS" = bin/codex ]; then
  echo "bench.sh: building bin/codex ..." >&2
  go build -o bin/codex .
fi
[ -x "$OURS" ] || { echo "bench.sh: our binary $OURS is not executable" >&2; exit 1; }

MCP_FLAGS=()
if MCP_ENV=$(./scripts/patched-bash.sh --env); then
  eval "$MCP_ENV"
  MCP_FLAGS=(-mcp-bash "$CODEX_BASH_PATH" -mcp-ref-server "$REF_MCP_SERVER" \
    -mcp-ref-wrapper "$REF_EXECVE_WRAPPER" -mcp-sandbox-exe "$REF_SANDBOX_EXE")
else
  echo "bench.sh: no patched Bash or 0.97.0 reference: the mcp group will measure nothing" >&2
fi

exec go run ./cmd/codex-bench -ours "$OURS" -ref "$REF" "${MCP_FLAGS[@]}" "$@"
