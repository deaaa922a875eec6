package sandbox_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/codexec/codex/sandbox"
)

// tempDir returns a canonical temporary directory.
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// mkdirs creates directories below base.
func mkdirs(t *testing.T, base string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// writeFile creates a file (and its parents) below base.
func writeFile(t *testing.T, base, name, content string) {
	t.Helper()
	p := filepath.Join(base, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// symlink creates base/link pointing at target.
func symlink(t *testing.T, target, base, link string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
		t.Fatal(err)
	}
}

// resolve runs Resolve for a process and fails the test on error.
func resolve(t *testing.T, p sandbox.Profile, ctx sandbox.Context) sandbox.Plan {
	t.Helper()
	plan, err := sandbox.Resolve(p, ctx, sandbox.PurposeProcess)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return plan
}

func TestAccessRule(t *testing.T) {
	t.Parallel()
	ctx := sandbox.Context{Cwd: "/w"}
	p := sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.PathEntry("/w", sandbox.AccessWrite),
		sandbox.PathEntry("/w/private", sandbox.AccessDeny),
		sandbox.PathEntry("/w/private/public", sandbox.AccessWrite),
		sandbox.PathEntry("/tie/rw", sandbox.AccessRead),
		sandbox.PathEntry("/tie/rw", sandbox.AccessWrite),
		sandbox.PathEntry("/tie/wd", sandbox.AccessWrite),
		sandbox.PathEntry("/tie/wd", sandbox.AccessDeny),
		sandbox.PathEntry("/tie/rd", sandbox.AccessDeny),
		sandbox.PathEntry("/tie/rd", sandbox.AccessRead),
		sandbox.PathEntry("/ro", sandbox.AccessRead),
	)
	tests := []struct {
		path string
		want sandbox.Access
	}{
		{"/w/private/public/x", sandbox.AccessWrite}, // deepest entry wins
		{"/w/private/y", sandbox.AccessDeny},
		{"/w/private", sandbox.AccessDeny},
		{"/w/privateer", sandbox.AccessWrite}, // component prefix, not string prefix
		{"/w/src/main.go", sandbox.AccessWrite},
		{"src/main.go", sandbox.AccessWrite}, // relative to the policy cwd
		{"/tie/rw/f", sandbox.AccessWrite},   // write > read
		{"/tie/wd/f", sandbox.AccessDeny},    // deny > write
		{"/tie/rd", sandbox.AccessDeny},      // deny > read
		{"/ro/f", sandbox.AccessRead},
		{"/elsewhere", sandbox.AccessDeny}, // no match means deny
		{"/", sandbox.AccessDeny},
	}
	for _, tt := range tests {
		if got := p.Access(tt.path, ctx); got != tt.want {
			t.Errorf("Access(%s) = %s, want %s", tt.path, got, tt.want)
		}
	}
	for _, open := range []sandbox.Profile{sandbox.DangerFullAccess(), sandbox.ExternalSandbox(false), {Type: sandbox.ProfileDisabled}} {
		if got := open.Access("/etc/passwd", ctx); got != sandbox.AccessWrite {
			t.Errorf("%+v: Access = %s, want write", open, got)
		}
	}
	if got := (sandbox.Profile{}).Access("/etc/passwd", ctx); got != sandbox.AccessDeny {
		t.Errorf("default profile: Access = %s, want deny", got)
	}
}

func TestProjectRootsExpansion(t *testing.T) {
	t.Parallel()
	p := sandbox.Managed(sandbox.NetworkRestricted, sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
		sandbox.ProjectRootsEntry("docs", sandbox.AccessRead))
	ctx := sandbox.Context{Cwd: "/c", WorkspaceRoots: []string{"/a", "/b"}}
	for path, want := range map[string]sandbox.Access{
		"/a/x": sandbox.AccessWrite, "/b/x": sandbox.AccessWrite, "/c/x": sandbox.AccessDeny,
		"/a/docs/x": sandbox.AccessRead, "/b/docs": sandbox.AccessRead,
	} {
		if got := p.Access(path, ctx); got != want {
			t.Errorf("Access(%s) = %s, want %s", path, got, want)
		}
	}
	// Without workspace roots, project_roots is the policy cwd.
	if got := p.Access("/c/x", sandbox.Context{Cwd: "/c"}); got != sandbox.AccessWrite {
		t.Errorf("cwd fallback: Access = %s, want write", got)
	}
	// tmpdir needs an absolute TmpDir.
	tmp := sandbox.Managed(sandbox.NetworkRestricted, sandbox.SpecialEntry(sandbox.SpecialTmpdir, sandbox.AccessWrite))
	if got := tmp.Access("/t/x", sandbox.Context{TmpDir: "/t"}); got != sandbox.AccessWrite {
		t.Errorf("tmpdir: Access = %s, want write", got)
	}
	if got := tmp.Access("t/x", sandbox.Context{TmpDir: "t"}); got != sandbox.AccessDeny {
		t.Errorf("relative tmpdir: Access = %s, want deny", got)
	}
}

func TestPredicates(t *testing.T) {
	t.Parallel()
	root := func(a sandbox.Access) sandbox.Entry { return sandbox.SpecialEntry(sandbox.SpecialRoot, a) }
	m := func(es ...sandbox.Entry) sandbox.Profile { return sandbox.Managed(sandbox.NetworkRestricted, es...) }
	tests := []struct {
		name                          string
		p                             sandbox.Profile
		fullRead, fullWrite, defaults bool
	}{
		{"default deny-all", sandbox.Profile{}, false, false, false},
		{"root read", m(root(sandbox.AccessRead)), true, false, false},
		{"root read with a deny", m(root(sandbox.AccessRead), sandbox.PathEntry("/s", sandbox.AccessDeny)), false, false, false},
		{"root read with a deny glob", m(root(sandbox.AccessRead), sandbox.GlobDenyEntry("*.env")), false, false, false},
		{"root write", m(root(sandbox.AccessWrite)), true, true, false},
		{"root write, read /etc narrows", m(root(sandbox.AccessWrite), sandbox.PathEntry("/etc", sandbox.AccessRead)), true, false, false},
		{"root write, read / shadowed", m(root(sandbox.AccessWrite), sandbox.PathEntry("/", sandbox.AccessRead)), true, true, false},
		{"root write, minimal and unknown never narrow", m(root(sandbox.AccessWrite),
			sandbox.SpecialEntry(sandbox.SpecialMinimal, sandbox.AccessRead),
			sandbox.Entry{Path: sandbox.EntryPath{Type: sandbox.PathSpecial, Kind: sandbox.SpecialUnknown}, Access: sandbox.AccessRead}),
			true, true, false},
		{"root write, glob narrows", m(root(sandbox.AccessWrite), sandbox.GlobDenyEntry("**/*.env")), false, false, false},
		{"root write, shadowed project_roots read", m(root(sandbox.AccessWrite),
			sandbox.ProjectRootsEntry("", sandbox.AccessRead), sandbox.ProjectRootsEntry("", sandbox.AccessWrite)), true, true, false},
		{"root write, slash_tmp read shadowed by /tmp write", m(root(sandbox.AccessWrite),
			sandbox.SpecialEntry(sandbox.SpecialSlashTmp, sandbox.AccessRead), sandbox.PathEntry("/tmp", sandbox.AccessWrite)), true, true, false},
		{"root write, deny not shadowed by write", m(root(sandbox.AccessWrite),
			sandbox.PathEntry("/x", sandbox.AccessDeny), sandbox.PathEntry("/x", sandbox.AccessWrite)), false, false, false},
		{"root write and root deny", m(root(sandbox.AccessWrite), root(sandbox.AccessDeny)), false, false, false},
		{"minimal", m(sandbox.SpecialEntry(sandbox.SpecialMinimal, sandbox.AccessRead)), false, false, true},
		{"minimal under full read", m(root(sandbox.AccessRead), sandbox.SpecialEntry(sandbox.SpecialMinimal, sandbox.AccessRead)), true, false, false},
		{"workspace-write", sandbox.WorkspaceWrite(nil, false, false, false), true, false, false},
		{"unrestricted", sandbox.DangerFullAccess(), true, true, false},
		{"disabled", sandbox.Profile{Type: sandbox.ProfileDisabled}, true, true, false},
		{"external", sandbox.ExternalSandbox(false), true, true, false},
	}
	for _, tt := range tests {
		if got := tt.p.FullDiskRead(); got != tt.fullRead {
			t.Errorf("%s: FullDiskRead = %v, want %v", tt.name, got, tt.fullRead)
		}
		if got := tt.p.FullDiskWrite(); got != tt.fullWrite {
			t.Errorf("%s: FullDiskWrite = %v, want %v", tt.name, got, tt.fullWrite)
		}
		if got := tt.p.IncludePlatformDefaults(); got != tt.defaults {
			t.Errorf("%s: IncludePlatformDefaults = %v, want %v", tt.name, got, tt.defaults)
		}
		if got, want := sandbox.FSNeedsSandbox(tt.p), tt.p.Restricted() && !tt.fullWrite; got != want {
			t.Errorf("%s: FSNeedsSandbox = %v, want %v", tt.name, got, want)
		}
	}
}

func TestProcessNeedsHelper(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    sandbox.Profile
		want bool
	}{
		{"disabled", sandbox.Profile{Type: sandbox.ProfileDisabled}, false},
		{"danger-full-access", sandbox.DangerFullAccess(), false},
		{"external, network restricted", sandbox.ExternalSandbox(false), false},
		{"external, network enabled", sandbox.ExternalSandbox(true), false},
		{"unrestricted, network restricted", sandbox.Profile{FileSystem: sandbox.FileSystemUnrestricted}, true},
		{"read-only, network off", sandbox.ReadOnly(false), true},
		{"read-only, network on", sandbox.ReadOnly(true), true},
		{"root write, network on", sandbox.Managed(sandbox.NetworkEnabled, sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessWrite)), true},
		{"root write and deny glob, network on", sandbox.Managed(sandbox.NetworkEnabled,
			sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessWrite), sandbox.GlobDenyEntry("**/*.env")), true},
	}
	for _, tt := range tests {
		if got := sandbox.ProcessNeedsHelper(tt.p); got != tt.want {
			t.Errorf("%s: ProcessNeedsHelper = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestModeMatrix covers the mode matrix of docs/sandbox.md §3.7 and the seccomp
// selection of docs/sandbox.md §4.4 (checklist item 28).
func TestModeMatrix(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	ctx := sandbox.Context{Cwd: dir, Euid: 0}
	rootWrite := func(network sandbox.Network, es ...sandbox.Entry) sandbox.Profile {
		return sandbox.Managed(network, append([]sandbox.Entry{sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessWrite)}, es...)...)
	}
	type want struct {
		mnt, pid, net, roRoot, landlock, enforces, netDisabled bool
		seccomp                                                sandbox.SeccompMode
	}
	tests := []struct {
		name string
		p    sandbox.Profile
		want want
	}{
		{"disabled", sandbox.Profile{Type: sandbox.ProfileDisabled}, want{}},
		{"danger-full-access", sandbox.DangerFullAccess(), want{}},
		{"external restricted", sandbox.ExternalSandbox(false), want{}},
		{"unrestricted, network off", sandbox.Profile{FileSystem: sandbox.FileSystemUnrestricted},
			want{true, true, true, false, false, true, true, sandbox.SeccompRestricted}},
		{"read-only, network off", sandbox.ReadOnly(false),
			want{true, true, true, true, true, true, true, sandbox.SeccompRestricted}},
		{"read-only, network on", sandbox.ReadOnly(true),
			want{true, true, false, true, true, true, false, sandbox.SeccompVMSocketRestricted}},
		{"workspace-write, network off", sandbox.WorkspaceWrite(nil, false, true, true),
			want{true, true, true, true, true, true, true, sandbox.SeccompRestricted}},
		{"workspace-write, network on", sandbox.WorkspaceWrite(nil, true, true, true),
			want{true, true, false, true, true, true, false, sandbox.SeccompVMSocketRestricted}},
		// Full write is still a sandbox: the kernel layer in mount, PID
		// and (network off) network namespaces, issue 17 item 8.
		{"full write, network on", rootWrite(sandbox.NetworkEnabled), want{mnt: true, pid: true, enforces: true}},
		{"full write, network off", rootWrite(sandbox.NetworkRestricted),
			want{true, true, true, false, false, true, true, sandbox.SeccompRestricted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			plan := resolve(t, tt.p, ctx)
			got := want{plan.NewMountNS, plan.NewPIDNS, plan.NewNetNS, plan.ReadOnlyRoot, plan.Landlock != nil,
				plan.Enforces(), plan.NetworkDisabled, plan.Seccomp}
			if got != tt.want {
				t.Fatalf("got  %+v\nwant %+v\nplan %+v", got, tt.want, plan)
			}
			if plan.NewUserNS {
				t.Fatalf("user namespace requested as root")
			}
		})
	}
}

func TestUserNamespaceWhenNotRoot(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	plan := resolve(t, sandbox.ReadOnly(false), sandbox.Context{Cwd: dir, Euid: 1000})
	if !plan.NewUserNS {
		t.Fatalf("NewUserNS = false for euid 1000")
	}
	plan = resolve(t, sandbox.Profile{FileSystem: sandbox.FileSystemUnrestricted}, sandbox.Context{Euid: 1000})
	if !plan.NewUserNS || !plan.NewMountNS || !plan.NewNetNS {
		t.Fatalf("an unrestricted, network-off plan needs its namespaces too: %+v", plan)
	}
	if plan = resolve(t, sandbox.DangerFullAccess(), sandbox.Context{Euid: 1000}); plan.Enforces() {
		t.Fatalf("danger-full-access is no sandbox: %+v", plan)
	}
}

func TestReadOnlyLandlock(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	plan := resolve(t, sandbox.WorkspaceWrite(nil, false, true, true), sandbox.Context{Cwd: dir})
	ll := plan.Landlock
	if ll == nil || !reflect.DeepEqual(ll.ReadDirs, []string{"/"}) || !reflect.DeepEqual(ll.WriteDirs, []string{dir}) {
		t.Fatalf("landlock %+v", ll)
	}
	for _, dev := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"} {
		if !slices.Contains(ll.WriteFiles, dev) {
			t.Errorf("WriteFiles lacks %s", dev)
		}
	}
	if plan.RestrictedRead || plan.ReadableRoots != nil {
		t.Fatalf("full read must not restrict reads: %+v", plan)
	}
	if !reflect.DeepEqual(plan.WritableRoots, []sandbox.WritableRoot{{Path: dir}}) {
		t.Fatalf("writable roots %+v", plan.WritableRoots)
	}
	if !reflect.DeepEqual(plan.ProtectedCreate, []string{dir + "/.agents", dir + "/.codex", dir + "/.git"}) {
		t.Fatalf("protected create %v", plan.ProtectedCreate)
	}
}

func TestRestrictedRead(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	mkdirs(t, dir, "work", "blocked", "bin")
	self := filepath.Join(dir, "bin", "codex")
	p := sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialMinimal, sandbox.AccessRead),
		sandbox.SpecialEntry(sandbox.SpecialTmpdir, sandbox.AccessWrite),
		sandbox.PathEntry(filepath.Join(dir, "blocked"), sandbox.AccessDeny),
	)
	ctx := sandbox.Context{Cwd: filepath.Join(dir, "work"), TmpDir: filepath.Join(dir, "work"), Self: self}
	plan := resolve(t, p, ctx)
	if !plan.RestrictedRead || !plan.ReadOnlyRoot {
		t.Fatalf("plan %+v", plan)
	}
	for _, want := range []string{"/usr", "/etc", filepath.Join(dir, "bin"), filepath.Join(dir, "work")} {
		if !slices.Contains(plan.ReadableRoots, want) {
			t.Errorf("ReadableRoots %v lacks %s", plan.ReadableRoots, want)
		}
	}
	if !reflect.DeepEqual(plan.Landlock.ReadDirs, plan.ReadableRoots) {
		t.Errorf("landlock reads %v, want the readable roots %v", plan.Landlock.ReadDirs, plan.ReadableRoots)
	}
	if !reflect.DeepEqual(plan.DenyPaths, []string{filepath.Join(dir, "blocked")}) {
		t.Errorf("DenyPaths %v", plan.DenyPaths)
	}
	if plan.CanWrite(filepath.Join(dir, "blocked", "x")) || !plan.CanWrite(filepath.Join(dir, "work", "x")) {
		t.Errorf("CanWrite disagrees with the policy")
	}
	if plan.CanRead("/home") || !plan.CanRead("/usr/bin/env") {
		t.Errorf("CanRead disagrees with the policy")
	}
	// A root read entry with a deny keeps the full read base.
	withRoot := sandbox.Managed(sandbox.NetworkRestricted, sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.PathEntry(filepath.Join(dir, "blocked"), sandbox.AccessDeny))
	if plan := resolve(t, withRoot, ctx); plan.RestrictedRead || !reflect.DeepEqual(plan.Landlock.ReadDirs, []string{"/"}) {
		t.Errorf("root read with deny: %+v", plan)
	}
}

func TestFSHelperPurpose(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	self := filepath.Join(dir, "codex")
	ctx := sandbox.Context{Cwd: dir, Self: self, Euid: 0}
	// Network enabled in the profile: the fs helper still restricts it.
	plan, err := sandbox.Resolve(sandbox.WorkspaceWrite(nil, true, true, true), ctx, sandbox.PurposeFSHelper)
	if err != nil {
		t.Fatal(err)
	}
	if !plan.FSHelper || !plan.NewNetNS || plan.Seccomp != sandbox.SeccompRestricted || !plan.NetworkDisabled {
		t.Fatalf("fs helper plan %+v", plan)
	}
	// Restricted read: the minimal set and our binary's directory are added.
	p := sandbox.Managed(sandbox.NetworkEnabled, sandbox.ProjectRootsEntry("", sandbox.AccessWrite))
	plan, err = sandbox.Resolve(p, ctx, sandbox.PurposeFSHelper)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/usr", dir} {
		if !slices.Contains(plan.ReadableRoots, want) {
			t.Errorf("ReadableRoots %v lacks %s", plan.ReadableRoots, want)
		}
	}
	if procPlan := resolve(t, p, ctx); slices.Contains(procPlan.ReadableRoots, "/usr") {
		t.Errorf("a process without minimal must not read /usr: %v", procPlan.ReadableRoots)
	}
}

// TestDeepestEntryWinsPlan is checklist item 24 through a resolved plan.
func TestDeepestEntryWinsPlan(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	mkdirs(t, dir, "private/public")
	p := sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.ProjectRootsEntry("", sandbox.AccessWrite),
		sandbox.ProjectRootsEntry("private", sandbox.AccessDeny),
		sandbox.ProjectRootsEntry("private/public", sandbox.AccessWrite),
	)
	plan := resolve(t, p, sandbox.Context{Cwd: dir})
	if !plan.CanWrite(filepath.Join(dir, "private/public/x")) {
		t.Errorf("private/public/x must be writable: %+v", plan)
	}
	if plan.CanWrite(filepath.Join(dir, "private/y")) || plan.CanRead(filepath.Join(dir, "private/y")) {
		t.Errorf("private/y must be denied: %+v", plan)
	}
	roots := []string{}
	for _, w := range plan.WritableRoots {
		roots = append(roots, w.Path)
	}
	if !reflect.DeepEqual(roots, []string{dir, filepath.Join(dir, "private/public")}) {
		t.Errorf("writable roots %v (shallowest first)", roots)
	}
	if !reflect.DeepEqual(plan.DenyPaths, []string{filepath.Join(dir, "private")}) {
		t.Errorf("deny paths %v", plan.DenyPaths)
	}
}

// TestGitConfigNotWritable is checklist item 25.
func TestGitConfigNotWritable(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	writeFile(t, dir, ".git/config", "[core]\n")
	plan := resolve(t, sandbox.WorkspaceWrite(nil, false, true, true), sandbox.Context{Cwd: dir})
	if plan.CanWrite(filepath.Join(dir, ".git/config")) {
		t.Fatalf(".git/config writable: %+v", plan)
	}
	if !plan.CanWrite(filepath.Join(dir, "main.go")) {
		t.Fatalf("sibling not writable: %+v", plan)
	}
	if !slices.Contains(plan.WritableRoots[0].ReadOnly, filepath.Join(dir, ".git")) {
		t.Fatalf("ReadOnly %v lacks .git", plan.WritableRoots[0].ReadOnly)
	}
}

func TestRootWriteWithCarveOut(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	mkdirs(t, dir, "etc")
	p := sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessWrite),
		sandbox.PathEntry(filepath.Join(dir, "etc"), sandbox.AccessRead))
	plan := resolve(t, p, sandbox.Context{Cwd: dir})
	want := []sandbox.WritableRoot{{Path: "/", ReadOnly: []string{filepath.Join(dir, "etc")}}}
	if plan.ReadOnlyRoot || plan.Landlock != nil || !reflect.DeepEqual(plan.WritableRoots, want) {
		t.Fatalf("plan %+v", plan)
	}
	if plan.CanWrite(filepath.Join(dir, "etc/x")) || !plan.CanWrite(filepath.Join(dir, "x")) {
		t.Fatalf("CanWrite disagrees with the policy")
	}
}

func TestFileAndDeniedCarveOuts(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	writeFile(t, dir, "w/.git/config", "x")
	writeFile(t, dir, "notes.txt", "x")
	w := filepath.Join(dir, "w")
	p := sandbox.Managed(sandbox.NetworkRestricted,
		sandbox.SpecialEntry(sandbox.SpecialRoot, sandbox.AccessRead),
		sandbox.PathEntry(w, sandbox.AccessWrite),
		sandbox.PathEntry(filepath.Join(w, ".git"), sandbox.AccessDeny),
		sandbox.PathEntry(filepath.Join(dir, "notes.txt"), sandbox.AccessWrite))
	plan := resolve(t, p, sandbox.Context{Cwd: w})
	// The denied .git is masked, not bound read-only.
	if ro := rootOf(t, plan, w).ReadOnly; len(ro) != 0 {
		t.Errorf("ReadOnly %v", ro)
	}
	if !reflect.DeepEqual(plan.DenyPaths, []string{filepath.Join(w, ".git")}) {
		t.Errorf("DenyPaths %v", plan.DenyPaths)
	}
	// A writable file is a root without metadata.
	if rootOf(t, plan, filepath.Join(dir, "notes.txt")).ReadOnly != nil {
		t.Errorf("file root has carve-outs")
	}
	for _, p := range plan.ProtectedCreate {
		if strings.HasPrefix(p, filepath.Join(dir, "notes.txt")) {
			t.Errorf("ProtectedCreate %v lists paths below a file", plan.ProtectedCreate)
		}
	}
}
