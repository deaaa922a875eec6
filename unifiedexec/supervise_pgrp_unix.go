//go:build unix

package unifiedexec

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts the supervised server in a process group of its
// own, so that the signals a terminal sends to our foreground group
// (Ctrl-C, Ctrl-\) reach us, who forward them to the command, and not the
// server, which would die and lose the command. The server still ends
// with us: it exits at EOF on its stdin, and Close stops it.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
