package sandbox

import "os"

// SelfExe is how every re-exec of our own binary names it: the kernel's
// link to the running image. An exec of it resolves in the forked child
// (whose image is ours) to the file we were started from, even after that
// path was renamed over or deleted; an exec by path would run whatever
// now lies there, and a sandboxed command may write there.
const SelfExe = "/proc/self/exe"

// selfPath is our executable's path, captured once at start-up.
var selfPath, _ = os.Executable()

// SelfPath returns the path our executable was started from, captured at
// start-up ("" if unknown). It names the file for policy rules (its
// directory stays readable; the file itself is kept read-only); never exec
// it, use SelfExe.
func SelfPath() string { return selfPath }
