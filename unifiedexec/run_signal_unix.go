//go:build unix

package unifiedexec

import "syscall"

// sigWinch is the terminal resize signal.
const sigWinch = syscall.SIGWINCH
