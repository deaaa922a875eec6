//go:build !unix

package unifiedexec

import "syscall"

// sigWinch stands for the terminal resize signal, which this system lacks.
const sigWinch = syscall.Signal(-1)
