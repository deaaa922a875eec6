// Package shelltool is the MCP server of `codex exec-mcp-server`: one tool,
// `shell`, that runs a Bash command inside the sandbox while every program
// the command executes is judged by the .rules policy (package execpolicy)
// and run in the sandbox, escalated outside it, or denied (package
// shelltool/escalate).
package shelltool
