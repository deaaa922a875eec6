#!/usr/bin/env bash
# Runs ../shared/realclient/run.sh (the real Codex CLI 0.169.0 as client)
# against bin/codex: over WebSocket with the resume test, with the
# workspace-write sandbox, then over stdio.
set -euo pipefail
cd "$(dirname "$0")/.."
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
