package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A second reader's attacks on the judged-file escalation and the
// file-based forbidden (docs/shell-tool.md §11). Each test asserts the
// safe behaviour; the ones that fail are attacks that still work (see
// the commit message and the review report).

// TestReviewArgv0SelectsGitBuiltin: the escalated /usr/bin/git keeps the
// command's argv[0], and git runs the builtin its argv[0] names
// ("git-archive" is `git archive`). `exec -a git-archive git status
// --remote=R --exec=CMD` matches the `git status` rule, qualifies (the
// real /usr/bin/git, working directory / outside the writable roots),
// and git archive runs CMD through the shell, unsandboxed.
func TestReviewArgv0SelectsGitBuiltin(t *testing.T) {
	t.Parallel()
	needGit(t)
	ws := canonicalTemp(t)
	outside := canonicalTemp(t)
	script := fmt.Sprintf(`cd /
(exec -a git-archive git status --remote=%[2]s --exec='id > %[1]s/argv0; cat /proc/self/status | grep -i ^capeff >> %[1]s/argv0; false #'); echo rc=$?
`, outside, ws)
	s := startRedteam(t)
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	if b, err := os.ReadFile(filepath.Join(outside, "argv0")); err == nil {
		t.Errorf("argv[0]=git-archive: the command's shell code ran outside the sandbox: %q", b)
	}
}

// TestReviewShebangNUL: the kernel ends a #! interpreter at a NUL byte;
// the judge does not, so "#!/usr/bin/touch\0x" is judged as a program
// named "touch\x00x" (no rule: the heuristic allows it), and the check
// at the exec event accepts any interpreter for a script. The forbidden
// touch runs.
func TestReviewShebangNUL(t *testing.T) {
	t.Parallel()
	ws := canonicalTemp(t)
	script := `printf '#!/usr/bin/touch\0x\n' > okname; chmod +x okname; ./okname nul-mark; echo rc=$?
printf '#!/usr/bin/touch\tx\n' > tabname; chmod +x tabname; ./tabname tab-mark; echo rc=$?
`
	s := startRedteam(t)
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	for _, f := range []string{"nul-mark", "tab-mark"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
			t.Errorf("%s: the forbidden touch ran as a #! interpreter", f)
		}
	}
}

// TestReviewScriptSwapRace: a script is judged by its #! line at the
// exec's seccomp stop, but the check at the exec event accepts any
// interpreter (target.matches ignores the image for a script). A
// sibling that renames "#!/usr/bin/touch" over an allowed "#!/bin/true"
// between the two runs the forbidden touch.
func TestReviewScriptSwapRace(t *testing.T) {
	ws := canonicalTemp(t)
	script := `printf '#!/bin/true\n' > g; printf '#!/usr/bin/touch\n' > b; chmod +x g b; cp g s
python3 -c '
import os, shutil, time
end = time.time() + 8
while time.time() < end:
    for src, tmp in (("g", "t1"), ("b", "t2")):
        shutil.copy(src, tmp); os.chmod(tmp, 0o755); os.rename(tmp, "s")
' &
for i in $(seq 1 250); do ./s race-$i 2>/dev/null; done
kill $! # the swaps are over with the runs they race (8 s at the most)
wait
ls | grep -c '^race-'
`
	s := startRedteam(t)
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	m, _ := filepath.Glob(filepath.Join(ws, "race-*"))
	if len(m) > 0 {
		t.Errorf("the forbidden touch ran %d times through a script swapped after the decision", len(m))
	}
}

// TestReviewELFSwapRace: an ELF is judged by identity and content at
// the seccomp stop, but the exec event compares only device, inode and
// argv. A sibling rewriting the same inode between the decision and the
// kernel's open (/bin/true's bytes, then touch's) runs the forbidden
// touch.
func TestReviewELFSwapRace(t *testing.T) {
	ws := canonicalTemp(t)
	script := `cp /bin/true x; chmod +x x
python3 -c '
import os, time
g = open("/bin/true", "rb").read(); b = open("/usr/bin/touch", "rb").read()
end = time.time() + 8
while time.time() < end:
    for c in (g, b):
        try:
            fd = os.open("x", os.O_WRONLY | os.O_TRUNC)
            os.write(fd, c); os.close(fd)
        except OSError:
            pass
' &
for i in $(seq 1 400); do ./x elf-$i 2>/dev/null; done
kill $! # the rewrites are over with the runs they race (8 s at the most)
wait
ls | grep -c '^elf-'
`
	s := startRedteam(t)
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	m, _ := filepath.Glob(filepath.Join(ws, "elf-*"))
	if len(m) > 0 {
		t.Errorf("the forbidden touch ran %d times through an ELF rewritten after the decision", len(m))
	}
}

// TestReviewBlockingInterpreter: the judge opens a script's interpreter
// (and a loader's program) without checking that it is a regular file,
// then reads it for a #! line: a FIFO with no writer blocks that open,
// a pty master (/dev/ptmx) blocks the read, on the tracer's thread
// (DecideQuick runs there). The call must still end at its timeout, and
// another call must still be answered.
func TestReviewBlockingInterpreter(t *testing.T) {
	t.Parallel()
	loader := ""
	for _, l := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"} {
		if _, err := os.Stat(l); err == nil {
			loader = l
		}
	}
	for _, tc := range []struct{ name, cmd string }{
		{"fifo shebang", `mkfifo f; printf '#!%s/f\n' "$PWD" > s; chmod +x s; ./s; echo rc=$?`},
		{"fifo loader", `mkfifo f; ` + loader + ` ./f; echo rc=$?`},
		{"ptmx shebang", `printf '#!/dev/ptmx\n' > s; chmod +x s; ./s; echo rc=$?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a server and a workspace each: the three 3 s timeouts overlap
			ws := canonicalTemp(t)
			s := startRedteam(t)
			// Let a blocked open of the FIFO go at the end, so that
			// the server can exit (cleanups run last first).
			t.Cleanup(func() {
				if fd, err := unix.Open(filepath.Join(ws, "f"), unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
					unix.Close(fd)
				}
			})
			meta := func(id int, cmd string) string {
				return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"shell","arguments":{"command":%q,"workdir":%q,"login":false,"timeout_ms":3000},"_meta":{"codex/sandbox-state":{"permissionProfile":%s,"sandboxCwd":"file://%s"}}}}`,
					id, cmd, ws, workspaceProfile(ws), ws)
			}
			start := time.Now()
			s.send(t, meta(1, tc.cmd))
			time.Sleep(time.Second)
			s.send(t, meta(2, "echo alive"))
			got := map[string]bool{}
			for len(got) < 2 {
				select {
				case l, ok := <-s.lines:
					if !ok {
						t.Fatal("exec-mcp-server closed stdout")
					}
					for _, id := range []string{`"id":1,`, `"id":2,`} {
						if strings.Contains(l, id) {
							got[id] = true
							t.Logf("%v: %s", time.Since(start), l)
						}
					}
				case <-time.After(15 * time.Second):
					t.Fatalf("after %v, answered: %v (want both calls, the first at its 3 s timeout)", time.Since(start), got)
				}
			}
		})
	}
}

// TestReviewHashCachePoison: the content hash is cached by device,
// inode, size and modification time, and the command sets the
// modification time it likes (utime). A file with /bin/true's code,
// padded to touch's size, is hashed and cached as "not touch"; then the
// same inode gets touch's bytes and its old mtime back: the next exec
// hits the cache, is judged as an unknown program, and the forbidden
// touch runs. No race.
func TestReviewHashCachePoison(t *testing.T) {
	t.Parallel()
	ws := canonicalTemp(t)
	script := `cp /bin/true x; truncate -s $(stat -c %s /usr/bin/touch) x; chmod +x x
./x; echo first rc=$?
python3 -c '
import os
st = os.stat("x")
b = open("/usr/bin/touch", "rb").read()
fd = os.open("x", os.O_WRONLY); os.write(fd, b); os.close(fd)
os.utime("x", ns=(st.st_atime_ns, st.st_mtime_ns))
'
./x poison-mark; echo second rc=$?
`
	s := startRedteam(t)
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	if _, err := os.Stat(filepath.Join(ws, "poison-mark")); err == nil {
		t.Errorf("the forbidden touch ran: the hash cache took a rewritten file with its old mtime for the old content")
	}
}

// TestReviewInterpreterDepth: the judge stops following #! after five
// levels and then judges the last file by its name alone, although the
// kernel still runs it: four scripts, each the next one's interpreter,
// end in "#!<loader> /usr/bin/touch"; the loader at the judge's depth
// limit is judged as an unknown program, not by what it loads.
func TestReviewInterpreterDepth(t *testing.T) {
	t.Parallel()
	loader := ""
	for _, l := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"} {
		if _, err := os.Stat(l); err == nil {
			loader = l
		}
	}
	if loader == "" {
		t.Skip("no glibc loader")
	}
	ws := canonicalTemp(t)
	script := fmt.Sprintf(`printf '#!%[1]s /usr/bin/touch\n' > s4
printf '#!%[2]s/s4\n' > s3; printf '#!%[2]s/s3\n' > s2; printf '#!%[2]s/s2\n' > s1; printf '#!%[2]s/s1\n' > s0
chmod +x s0 s1 s2 s3 s4
./s0 depth-mark; echo rc=$?
`, loader, ws)
	s := startRedteam(t)
	r := s.call(t, 1, script, ws, workspaceProfile(ws), ws, 60000)
	t.Logf("%+v", r)
	if _, err := os.Stat(filepath.Join(ws, "depth-mark")); err == nil {
		t.Errorf("the forbidden touch ran through the loader at the judge's depth limit")
	}
}
