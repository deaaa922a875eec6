package shelltool

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"go.uber.org/zap"

	"github.com/codexec/codex/proc"
)

// callLeaf makes the cgroup leaf of one call (docs/shell-tool.md §4.1):
// Bash, everything it forks and every program escalated for it start in
// it, and it is killed and removed before the call answers. Without a tree
// (no cgroup v2: the server said so at start-up) it returns nil, and the
// call runs as the interceptor alone would run it; a leaf that cannot be
// made is warned about and the call runs without one, as an exec-server
// command does.
func callLeaf(tree *proc.TreeKiller, log *zap.Logger) *proc.Leaf {
	if tree == nil {
		return nil
	}
	leaf, err := tree.NewLeaf()
	if err != nil {
		log.Warn("no cgroup leaf for the call: it runs without per-call limits", zap.Error(err))
		return nil
	}
	return leaf
}

// startCmd starts cmd, built but never started, inside leaf: as
// cmd.Start would, with stdin /dev/null and cmd's Stdout and Stderr (both
// *os.File) and ExtraFiles, but through leaf.Fork, which may fork twice
// (an exec.Cmd starts once only).
func startCmd(cmd *exec.Cmd, leaf *proc.Leaf) (*os.Process, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	stdout, _ := cmd.Stdout.(*os.File)
	stderr, _ := cmd.Stderr.(*os.File)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	attr := &os.ProcAttr{
		Dir:   cmd.Dir,
		Env:   cmd.Env,
		Files: append([]*os.File{null, stdout, stderr}, cmd.ExtraFiles...),
		Sys:   cmd.SysProcAttr,
	}
	var p *os.Process
	_, err = leaf.Fork(cmd.SysProcAttr, func() (int, error) {
		var err error
		if p, err = os.StartProcess(cmd.Path, cmd.Args, attr); err != nil {
			return 0, err
		}
		return p.Pid, nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// killLeftGroup kills, for a call without a leaf, what the reaped Bash
// left in its process group pgid (background jobs; not what left the
// group). The number stays allocated while the group has members, so if
// /proc/pgid exists it names another process now and nothing is sent (the
// escalator's check).
func killLeftGroup(pgid int) {
	if _, err := os.Stat("/proc/" + strconv.Itoa(pgid)); err == nil {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
