//go:build linux && (amd64 || arm64)

package ptrace_test

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// progArg0 is the argv[0] under which the test binary plays a program
// inside the traced sandbox (runProg).
const progArg0 = "ptrace-test-prog"

// runProg runs one test program mode and returns its exit status.
func runProg(args []string) int {
	if len(args) == 0 {
		return 2
	}
	switch args[0] {
	case "race": // race MARKER: exec /usr/bin/true while a thread flips the path to /usr/bin/touch
		return race(args[1])
	case "ptrace": // try to attach to the parent and to trace ourselves
		errA := unix.PtraceAttach(os.Getppid())
		_, _, errB := unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)
		fmt.Printf("attach=%v traceme=%v\n", errA, errB)
		return 0
	case "threads": // 20 goroutines each running /bin/true
		var wg sync.WaitGroup
		fails := 0
		var mu sync.Mutex
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := exec.Command("/bin/true").Run(); err != nil {
					mu.Lock()
					fails++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		fmt.Printf("go fails=%d\n", fails)
		return 0
	}
	return 2
}

// race execs a path that another thread rewrites concurrently between
// "/usr/bin/true" and "/usr/bin/touch"; argv[1] is marker, which touch
// would create. It returns only when the exec failed.
func race(marker string) int {
	buf := make([]byte, 32)
	copy(buf, "/usr/bin/true\x00")
	arg0, _ := syscall.BytePtrFromString("x")
	arg1, _ := syscall.BytePtrFromString(marker)
	argv := []*byte{arg0, arg1, nil}
	envp := []*byte{nil}
	go func() {
		runtimeLockedFlip(buf)
	}()
	for i := 0; i < 1000; i++ {
		// Let the flipper start.
		syscall.Gettid()
	}
	_, _, e := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(&buf[0])),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envp[0])))
	fmt.Println("exec failed:", e)
	return 3
}

// runtimeLockedFlip rewrites buf's tail forever.
func runtimeLockedFlip(buf []byte) {
	a, b := []byte("rue\x00\x00"), []byte("ouch\x00")
	for {
		copy(buf[10:], b)
		copy(buf[10:], a)
	}
}
