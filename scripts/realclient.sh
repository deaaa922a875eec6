#!/usr/bin/env bash
# Runs ../shared/realclient/run.sh (the real Codex CLI 0.169.0 as client)
# against bin/codex: over WebSocket with the resume test, with the
# workspace-write sandbox, over stdio, then under a config.toml profile whose
# network goes through the managed proxy.
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

# managed_network_run URL runs the turn once more with a domain-filtered network
# (docs/sandbox.md §9): the Codex CLI's config gets [features] network_proxy and a
# default permission profile whose network allows one host, and the turn runs under
# that profile instead of --sandbox, so every process/start carries networkProxy and
# enforceManagedNetwork (the CLI refuses to start commands on a server that does not
# advertise networkProxyLaunch). run.sh has no option for either, so a copy of its
# folder is patched; a patch that no longer applies fails the run.
managed_network_run() {
  local dir status=0
  dir=$(mktemp -d)
  cp -r "$(dirname "$RUN")/." "$dir/"
  python3 - "$dir/$(basename "$RUN")" <<'PATCH' || { rm -rf "$dir"; echo "FAIL [managed-network] run.sh no longer takes the patch"; return 1; }
import sys
p = sys.argv[1]
s = open(p).read()
patches = [
    ('model_provider = "rc_mock"\n', 'model_provider = "rc_mock"\ndefault_permissions = "net"\n'),
    ('supports_websockets = false\nEOF\n', 'supports_websockets = false\n\n[features]\nnetwork_proxy = true\n\n'
     '[permissions.net.filesystem]\n":root" = "read"\n":workspace_roots" = { "." = "write" }\n\n'
     '[permissions.net.network]\nenabled = true\ndomains = { "api.example.com" = "allow" }\nEOF\n'),
    ('SANDBOX_ARGS=(--dangerously-bypass-approvals-and-sandbox)\n', "SANDBOX_ARGS=(-c 'approval_policy=\"never\"')\n"),
]
for old, new in patches:
    if s.count(old) != 1:
        sys.exit("patch anchor not found once: %r" % old)
    s = s.replace(old, new)
open(p, "w").write(s)
PATCH
  echo "== managed network: the turn under a profile whose network goes through the proxy"
  "$dir/$(basename "$RUN")" --skip-probe "$1" || status=1
  rm -rf "$dir"
  return $status
}
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
managed_network_run "$url" || status=1
exit $status
