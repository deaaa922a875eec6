//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// errLandlockUnavailable means the kernel has no usable Landlock at all.
var errLandlockUnavailable = errors.New("landlock is not supported by this kernel")

// Landlock access rights by purpose (kernel docs, "Filesystem flags").
const (
	llRead      = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	llWriteDir  = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSRefer | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	llFileOnly  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	llWriteFile = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// landlockAccess is the access of a Landlock ruleset at one ABI level:
// the handled set and what each kind of rule grants, each a subset of
// handled.
type landlockAccess struct {
	Handled, ReadDir, WriteDir, WriteFile landlock.AccessFSSet
}

// landlockAccessFor is the best-effort downgrade (docs/sandbox.md §4.5): a pure
// function of the kernel's ABI level. ABI 1 handles the basic rights, 2
// adds refer (without it, moves between directories are always denied), 3
// truncate, 5 ioctl on devices (without it, terminal ioctls on PTYs fail).
// Rights of ABI 9 and later (pathname Unix socket resolution) are not
// handled: network isolation is seccomp's job. Below ABI 1 there is nothing
// to enforce, and the error is a hard one.
func landlockAccessFor(abi int) (landlockAccess, error) {
	var handled landlock.AccessFSSet
	switch {
	case abi < 1:
		return landlockAccess{}, errLandlockUnavailable
	case abi == 1:
		handled = 1<<13 - 1
	case abi == 2:
		handled = 1<<14 - 1
	case abi <= 4:
		handled = 1<<15 - 1
	default:
		handled = 1<<16 - 1
	}
	return landlockAccess{
		Handled:   handled,
		ReadDir:   llRead & handled,
		WriteDir:  (llRead | llWriteDir) & handled,
		WriteFile: llWriteFile & handled,
	}, nil
}

// landlockABI returns the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// applyLandlock restricts every thread of the helper (and so the command)
// to the plan's Landlock rules. Missing paths are skipped; a path that is
// not a directory gets only the file rights of its rule (Landlock rejects
// directory rights on files). Partial enforcement on an older ABI is
// accepted; no enforcement at all is an error wrapping ErrUnenforceable.
func applyLandlock(r *LandlockRules) error {
	if r == nil {
		return nil
	}
	acc, err := landlockAccessFor(landlockABI())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnenforceable, err)
	}
	var rules []landlock.Rule
	add := func(paths []string, access landlock.AccessFSSet) {
		for _, p := range paths {
			st, err := os.Stat(p)
			if err != nil {
				continue
			}
			a := access
			if !st.IsDir() {
				a &= llFileOnly
			}
			rules = append(rules, landlock.PathAccess(a, p).IgnoreIfMissing())
		}
	}
	add(r.ReadDirs, acc.ReadDir)
	add(r.WriteDirs, acc.WriteDir)
	add(r.WriteFiles, acc.WriteFile)
	cfg := landlock.Config{HandledAccessFS: acc.Handled}
	if err := cfg.RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// landlockSignalScopeABI is the first Landlock ABI with signal scoping
// (LANDLOCK_SCOPE_SIGNAL, Linux 6.12).
const landlockSignalScopeABI = 6

// SignalScopeAvailable reports whether the kernel can keep a sandboxed
// command's signals inside its sandbox (Landlock ABI 6), which a plan
// that inherits the server's PID namespace needs (Plan.InheritPIDNS).
func SignalScopeAvailable() error {
	if v := landlockABI(); v < landlockSignalScopeABI {
		return fmt.Errorf("%w: Landlock signal scoping needs ABI %d (Linux 6.12); this kernel has %d", ErrUnenforceable, landlockSignalScopeABI, v)
	}
	return nil
}

// scopeSignals restricts every thread of the helper, and so the command,
// to signal only processes of its own Landlock domain: the command's own
// tree. A plan in the server's PID namespace needs it; there the server,
// its watchdog and every other host process are otherwise a kill(2)
// away. It fails closed below ABI 6.
func scopeSignals() error {
	if err := SignalScopeAvailable(); err != nil {
		return err
	}
	if err := (landlock.Config{Scoped: ll.ScopeSignal}).Restrict(); err != nil {
		return fmt.Errorf("landlock signal scope: %w", err)
	}
	return nil
}
