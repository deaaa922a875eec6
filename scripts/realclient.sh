#!/usr/bin/env bash
# Runs ../shared/realclient/run.sh (the real Codex CLI 0.169.0 as client)
# against bin/codex: over WebSocket with the resume test, with the
# workspace-write sandbox, then over stdio.
#
#   scripts/realclient.sh --mcp [mcp.sh options]
#
# instead runs ../shared/realclient/mcp.sh (Codex 0.169.0 drives the MCP `shell`
# tool) against `bin/codex exec-mcp-server --escalate-in-writable-dirs`
# (kernel-level interception, the system's Bash), in every sandbox mode unless
# options are given (e.g. `--sandbox read-only --keep`); every check counts.
# The flag is there because mcp.sh's `allow` check runs `touch` from its
# workspace, a directory the workspace-write call can write, which our
# default refuses to escalate from (docs/shell-tool.md §11.2): without it that
# one check fails, by design. REALCLIENT_MCP_SERVER_FLAGS replaces the flag.
#
#   scripts/realclient.sh --mcp-wrapper [mcp.sh options]
#
# does the same for `--intercept wrapper` with the npm patched Bash of
# scripts/patched-bash.sh. The wrapper mode cannot see a program started by
# another program, so the two nested-exec checks of mcp.sh (`sh -c 'rm y'`,
# `env rm z`) are expected to fail in it: they are reported and not counted
# against the exit status unless REALCLIENT_STRICT=1.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --mcp ]; then
  shift
  [ $# -gt 0 ] || set -- --sandbox all
  # shellcheck disable=SC2086
  exec "${REALCLIENT_MCP:-../shared/realclient/mcp.sh}" "$@" -- "$PWD/bin/codex" exec-mcp-server \
    ${REALCLIENT_MCP_SERVER_FLAGS---escalate-in-writable-dirs}
fi
if [ "${1:-}" = --mcp-wrapper ]; then
  shift
  [ $# -gt 0 ] || set -- --sandbox all
  BASH_PATH=$(./scripts/patched-bash.sh)
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  status=0
  CODEX_BASH_PATH=$BASH_PATH "${REALCLIENT_MCP:-../shared/realclient/mcp.sh}" "$@" -- \
    "$PWD/bin/codex" exec-mcp-server --intercept wrapper --bash "$BASH_PATH" \
    ${REALCLIENT_MCP_SERVER_FLAGS---escalate-in-writable-dirs} | tee "$log" || status=$?
  [ "$status" = 0 ] && exit 0
  other=$(grep '^FAIL ' "$log" | grep -v "nested forbidden exec: sh -c 'rm y'" | grep -cv "nested forbidden exec: env rm z" || true)
  if [ "$other" = 0 ] && grep -q '^FAIL ' "$log" && [ "${REALCLIENT_STRICT:-0}" != 1 ]; then
    echo "realclient.sh: only the nested-exec checks failed, as expected in the wrapper mode (REALCLIENT_STRICT=1 counts them)"
    exit 0
  fi
  exit "$status"
fi
RUN=${REALCLIENT:-../shared/realclient/run.sh}
BIN=$PWD/bin/codex
out=$(mktemp)
"$BIN" exec-server --listen ws://127.0.0.1:0 >"$out" 2>"$out.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$out" "$out.log"' EXIT
for _ in $(seq 100); do [ -s "$out" ] && break; sleep 0.05; done
url=$(head -n1 "$out")
echo "server: $url (pid $pid)"
status=0
"$RUN" --resume-test "$url" || status=1
"$RUN" --sandbox workspace-write "$url" || status=1
"$RUN" --stdio "$BIN" exec-server --listen stdio || status=1
exit $status
