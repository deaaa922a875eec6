//go:build linux

package sandbox_test

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/codexec/codex/internal/fsat"
	"github.com/codexec/codex/sandbox"
)

// guardedPlan resolves the workspace profile in dir and guards it.
func guardedPlan(t *testing.T, dir string) (sandbox.Plan, *sandbox.HostGuard) {
	t.Helper()
	plan := resolve(t, workspace(), sandbox.Context{Cwd: dir})
	g := sandbox.GuardPlan(&plan, func(msg, path string, err error) { t.Logf("guard: %s %s: %v", msg, path, err) })
	return plan, g
}

// TestPlaceholderGuardsShare: a second guard (another process, as far as
// flock goes: each holds its own open file description) shares the
// placeholder the first made, although Resolve saw it as an existing
// directory; the first one's release leaves it, the last removes it.
func TestPlaceholderGuardsShare(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	git := filepath.Join(dir, ".git")
	p1, g1 := guardedPlan(t, dir)
	id, err := fsat.Lstat(git)
	if err != nil || p1.Identities[git] != id {
		t.Fatalf("no placeholder made: %v %v", err, p1.Identities[git])
	}
	if fi, _ := os.Lstat(git); fi.Mode().Perm()&0o222 != 0 {
		t.Errorf("placeholder mode %v has write bits", fi.Mode())
	}
	p2, g2 := guardedPlan(t, dir)
	if !slices.Contains(p2.Placeholders, git) || p2.Identities[git] != id {
		t.Fatalf("the second plan does not share the placeholder: %v %v", p2.Placeholders, p2.Identities[git])
	}
	if slices.Contains(rootOf(t, p2, dir).ReadOnly, git) {
		t.Errorf("shared placeholder still bound as a carve-out: %v", rootOf(t, p2, dir).ReadOnly)
	}
	g1.Release()
	if got, err := fsat.Lstat(git); err != nil || got != id {
		t.Fatalf("the first release removed a placeholder another guard holds: %v", err)
	}
	g2.Release()
	if _, err := os.Lstat(git); err == nil {
		t.Error("the last release left the placeholder")
	}
}

// TestPlaceholderLeftoverNotAdopted: an empty read-only directory nobody
// holds (a killed process's placeholder, or the user's own) stays a
// read-only carve-out and is never removed.
func TestPlaceholderLeftoverNotAdopted(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	agents := filepath.Join(dir, ".agents")
	if err := os.Mkdir(agents, 0o555); err != nil {
		t.Fatal(err)
	}
	plan, g := guardedPlan(t, dir)
	g.Release()
	if slices.Contains(plan.Placeholders, agents) || !slices.Contains(rootOf(t, plan, dir).ReadOnly, agents) {
		t.Errorf("a directory nobody holds was adopted: %v", plan.Placeholders)
	}
	if _, err := os.Lstat(agents); err != nil {
		t.Errorf("a directory nobody holds was removed: %v", err)
	}
}

// TestPlaceholderWidened: a missing .codex below a root that is not the
// cwd's is watched by Resolve but shadowed by the guard, as it is in a run
// whose cwd is that root.
func TestPlaceholderWidened(t *testing.T) {
	t.Parallel()
	dir, other := tempDir(t), tempDir(t)
	codex := filepath.Join(other, ".codex")
	plan := resolve(t, sandbox.WorkspaceWrite([]string{other}, false, true, true), sandbox.Context{Cwd: dir})
	if slices.Contains(plan.Placeholders, codex) || !slices.Contains(plan.ProtectedCreate, codex) {
		t.Fatalf("resolution changed: %v", plan.Placeholders)
	}
	g := sandbox.GuardPlan(&plan, nil)
	defer g.Release()
	if !slices.Contains(plan.Placeholders, codex) {
		t.Errorf("%s not shadowed: %v", codex, plan.Placeholders)
	}
	if _, err := os.Lstat(codex); err != nil {
		t.Errorf("no placeholder for %s: %v", codex, err)
	}
}

// TestPlaceholderReleaseRacesAcquire: while one guard releases, another
// acquires. Whoever wins, a guard that recorded an identity finds that
// directory at the name until it releases it, and nothing is left.
func TestPlaceholderReleaseRacesAcquire(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	git := filepath.Join(dir, ".git")
	for i := 0; i < 100; i++ {
		_, g1 := guardedPlan(t, dir)
		var (
			wg sync.WaitGroup
			p2 sandbox.Plan
			g2 *sandbox.HostGuard
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			p2 = resolve(t, workspace(), sandbox.Context{Cwd: dir})
			g2 = sandbox.GuardPlan(&p2, nil)
		}()
		g1.Release()
		wg.Wait()
		id, ok := p2.Identities[git]
		if !ok || !slices.Contains(p2.Placeholders, git) {
			t.Fatalf("round %d: the second guard holds no placeholder: %v (protected %v, roots %+v)", i, p2.Placeholders, p2.ProtectedCreate, p2.WritableRoots)
		}
		if got, err := fsat.Lstat(git); err != nil || got != id {
			t.Fatalf("round %d: the held placeholder is gone or replaced: %v", i, err)
		}
		g2.Release()
		if _, err := os.Lstat(git); err == nil {
			t.Fatalf("round %d: placeholder left", i)
		}
	}
}

// TestPlaceholderNotForeign: a name that is something else than a
// placeholder by guard time (a directory with content, a symlink) is
// neither held nor removed.
func TestPlaceholderNotForeign(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	plan := resolve(t, workspace(), sandbox.Context{Cwd: dir})
	writeFile(t, dir, ".git/HEAD", "x")
	if err := os.Symlink("/etc", filepath.Join(dir, ".agents")); err != nil {
		t.Fatal(err)
	}
	g := sandbox.GuardPlan(&plan, nil)
	for _, n := range []string{".git", ".agents"} {
		if _, ok := plan.Identities[filepath.Join(dir, n)]; ok {
			t.Errorf("%s held as a placeholder", n)
		}
	}
	g.Release()
	if _, err := os.Stat(filepath.Join(dir, ".git/HEAD")); err != nil {
		t.Errorf("a foreign .git was touched: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".agents")); err != nil {
		t.Errorf("a foreign .agents was touched: %v", err)
	}
}

// TestPlaceholderFSHelperSharesOnly: an fs helper's plan makes no
// placeholders (a missing name stays missing for the operation) but holds
// those another run holds, so they outlive that run's end while the
// operation lasts.
func TestPlaceholderFSHelperSharesOnly(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	fsPlan := func() sandbox.Plan {
		plan, err := sandbox.Resolve(workspace(), sandbox.Context{Cwd: dir}, sandbox.PurposeFSHelper)
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	plan := fsPlan()
	g := sandbox.GuardPlan(&plan, nil)
	if len(under(dir, plan.Placeholders)) != 0 {
		t.Errorf("fs plan has placeholders %v", plan.Placeholders)
	}
	for _, n := range []string{".git", ".agents", ".codex"} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			t.Errorf("fs plan made %s", n)
		}
	}
	g.Release()

	_, gp := guardedPlan(t, dir)
	plan = fsPlan()
	g = sandbox.GuardPlan(&plan, nil)
	git := filepath.Join(dir, ".git")
	if _, ok := plan.Identities[git]; !ok || !slices.Contains(plan.Placeholders, git) {
		t.Errorf("fs plan does not share the held placeholder: %v", plan.Placeholders)
	}
	gp.Release()
	if _, err := os.Lstat(git); err != nil {
		t.Errorf("the placeholder the fs operation holds was removed: %v", err)
	}
	g.Release()
	if _, err := os.Lstat(git); err == nil {
		t.Error("placeholder left after both")
	}
}

// TestPlaceholderFilledRemoved: what a command whose helper could not
// mount on the placeholder wrote into it after its watcher's last look is
// removed with it by the last holder.
func TestPlaceholderFilledRemoved(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	git := filepath.Join(dir, ".git")
	_, g := guardedPlan(t, dir)
	if err := os.Chmod(git, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, ".git/hooks/pre-commit", "#!/bin/sh\n")
	g.Release()
	if _, err := os.Lstat(git); err == nil {
		t.Error("a filled placeholder is left after the last release")
	}
}

// TestPlaceholderReleaseNoCapabilities: the last holder removes what was
// put into a placeholder without the server's capabilities: another
// user's folder found there (a command, uid 0 without capabilities, cannot
// delete its file, so it renames the folder into a placeholder its helper
// could not mount on) is not deleted for it, but moved aside, so that the
// protected name is free.
func TestPlaceholderReleaseNoCapabilities(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the file belongs to another user")
	}
	t.Parallel()
	dir := tempDir(t)
	git := filepath.Join(dir, ".git")
	_, g := guardedPlan(t, dir)
	if err := os.Chmod(git, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, ".git/foreign/keep", "another user's\n")
	for _, p := range []string{filepath.Join(git, "foreign", "keep"), filepath.Join(git, "foreign")} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	g.Release()
	if _, err := os.Lstat(git); err == nil {
		t.Error("the protected name still holds the leftover")
	}
	if kept, _ := filepath.Glob(filepath.Join(dir, ".git.codex-removed-*", "foreign", "keep")); len(kept) != 1 {
		t.Errorf("another user's file was deleted by the release (moved aside: %v)", kept)
	}
}
