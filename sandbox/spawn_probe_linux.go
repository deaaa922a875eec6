//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/codexec/codex/internal/reap"
)

// probeTimeout bounds the probe child; it normally takes milliseconds.
const probeTimeout = 10 * time.Second

// Available reports whether this executor can enforce sandbox plans: a
// Landlock ABI of at least 1, seccomp filters on a supported architecture,
// and a helper child that can create the namespaces and apply a full
// read-only plan (it is spawned once, with the same mechanism Wrap sets
// up, and restricts only itself). A non-nil error wraps ErrUnenforceable
// and says what is missing. The result is computed once per process.
func Available() error { return availableOnce() }

var availableOnce = sync.OnceValue(func() error {
	if err := checkKernel(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnenforceable, err)
	}
	if err := probeHelper(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnenforceable, err)
	}
	return nil
})

// checkKernel checks Landlock and seccomp without spawning anything.
func checkKernel() error {
	if landlockABI() < 1 {
		return errLandlockUnavailable
	}
	return seccompAvailable()
}

// probePlan is a small plan that uses every mechanism of the helper.
func probePlan() Plan {
	return Plan{
		NewMountNS:   true,
		NewPIDNS:     true,
		NewNetNS:     true,
		ReadOnlyRoot: true,
		Landlock:     &LandlockRules{ReadDirs: []string{"/"}, WriteFiles: []string{"/dev/null"}},
		Seccomp:      SeccompRestricted,
	}
}

// probeHelper runs our image as the helper in probe mode with probePlan.
func probeHelper() error {
	w, err := Wrap(probePlan())
	if err != nil {
		return err
	}
	defer closeExtraFiles(w.ExtraFiles)
	var stdout, stderr bytes.Buffer
	cmd := w.Command(context.Background())
	cmd.Args = append(cmd.Args, "--probe")
	cmd.Dir, cmd.Stdout, cmd.Stderr, cmd.WaitDelay = "/", &stdout, &stderr, time.Second
	if err := reap.StartCmd(cmd); err != nil { // owned: no orphan reaper takes its status
		return fmt.Errorf("starting the sandbox helper: %w", err)
	}
	timer := time.AfterFunc(probeTimeout, func() { _ = cmd.Process.Kill() })
	err = reap.WaitCmd(cmd)
	timer.Stop()
	if err != nil {
		return fmt.Errorf("sandbox helper probe: %w: %s", err, probeOutput(stderr.String()))
	}
	if stdout.String() != probeOK {
		return fmt.Errorf("sandbox helper probe: unexpected output %q (does main dispatch %s to sandbox.ChildMain?)", probeOutput(stdout.String()), HelperName)
	}
	return nil
}

// probeOutput shortens helper output for an error message.
func probeOutput(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 512 {
		s = s[:512] + "…"
	}
	return s
}

// closeExtraFiles closes fs, ignoring errors.
func closeExtraFiles(fs []*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
