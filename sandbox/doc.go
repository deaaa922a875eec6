// Package sandbox holds the sandbox policy model and its Linux enforcement
// (docs/sandbox.md).
//
// # Policy
//
// A Profile (the wire's PermissionProfile) or a legacy Policy describes what
// a command may touch. Resolve turns a profile and a Context into a Plan: a
// pure function, apart from the stats and walks needed to find existing
// paths and expand deny globs. The deepest matching entry wins, ties go
// deny > write > read, and an unmatched path is denied.
//
// # Enforcement
//
// Nothing here ever restricts the server process: Landlock, seccomp and
// no_new_privs are irreversible and apply to a whole process. Wrap rewrites
// a spawn so that our own binary runs as "codex-linux-sandbox" in new
// namespaces with the plan on fd 3; ChildMain, in that child, makes the root
// read-only, re-binds the writable roots with their read-only carve-outs,
// pins the folders that lead to denied paths and to our own executable
// (bound onto themselves, so no run can rename them), binds our executable
// read-only, masks denied paths, gives the command a /dev whose devpts
// instance holds only its own terminals, drops every capability, sets no_new_privs, applies
// Landlock and the seccomp network filter, and then runs the command as the
// PID 1 reaper of its namespace. On a kernel that cannot enforce what a plan
// requires, the request is refused (fail closed); an older Landlock ABI
// enforces what it can.
//
// Paths inside writable roots are the command's to change, so nothing trusts
// them: Resolve refuses a root or cwd that crosses a symlink inside another
// writable root and records the identity (device, inode) of every root and
// carve-out; the helper opens each with openat2(RESOLVE_NO_SYMLINKS), checks
// that identity and mounts from and onto the handle. Missing protected
// metadata is shadowed by read-only tmpfs placeholders on mountpoints made
// on the host by GuardPlan and shared across processes with flock
// (placeholder_host_linux.go); a watcher that works on parent handles
// covers the rest.
//
// # Denials
//
// LikelyDenied is the heuristic that tells a client whether a failed
// sandboxed command was probably blocked by the sandbox.
package sandbox
