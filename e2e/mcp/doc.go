// Package mcp holds the integration tests of the MCP `shell` server in its
// wrapper mode (docs/shell-tool.md §9): they start the server as a
// child process, speak MCP to it line by line over stdio, answer its
// elicitation requests from a per-test script, and assert the bytes and
// results a client sees, the files the commands leave and the processes
// they leave behind.
//
// The patched Bash comes from scripts/patched-bash.sh (npm, outside the
// repository); the tests skip, with the script's reason, only when npm or
// its registry cannot be reached.
//
// The server under test is ours (`codex exec-mcp-server --intercept
// wrapper`, built by TestMain) unless MCP_SERVER_CMD says otherwise:
//
//	MCP_SERVER_CMD=ref   the 0.97.0 reference server and wrapper from the npm
//	                     package, with codex 0.97.0's codex-linux-sandbox as
//	                     its helper; tests of behaviour docs/shell-tool.md §9.14 lists as ours
//	                     skip themselves
//	MCP_SERVER_CMD="prog args…"   any other command, judged as ours
//	                     (MCP_SERVER_REF=1 judges it as the reference)
package mcp
