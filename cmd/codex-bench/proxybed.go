// The proxy group's network test bed (docs/benchmarking.md §3, #P1–#P3;
// the same bed as e2e/netbed_test.go and the spec's probes): a network and
// mount namespace the bench makes itself, with a "public" address on lo,
// its own /etc/hosts and an HTTP destination, so that the proxies under
// test reach a public destination that exists nowhere else. Nothing sent
// in the bed leaves it: it has no device but lo and no route.
//
// The bed process is codex-bench itself, re-executed through /proc/self/exe
// in new network and mount namespaces with netBedEnv set (main dispatches
// it before anything else). It brings lo up with the address, binds the
// hosts file over /etc/hosts, serves the destination, then runs the server
// under test as its child on its own stdin and stdout (stdio JSON-RPC: the
// driver, outside the bed, cannot reach a listener inside it) and exits
// with the child's status.

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// netBedEnv carries the bed's settings (netBedConfig as JSON) to the
// re-executed bench.
const netBedEnv = "CODEX_BENCH_NETBED"

// The bed's destination: a public address that exists only inside the bed,
// and the name the proxy policy allows.
const (
	netBedPublic = "93.184.216.34"
	netBedHost   = "bench.example.com"
)

// netBedHosts is the bed's /etc/hosts.
const netBedHosts = "127.0.0.1 localhost\n::1 localhost\n" + netBedPublic + " " + netBedHost + " other.example.com\n"

// netBedConfig is what the bed process is told.
type netBedConfig struct {
	Hosts string   // the file to bind over /etc/hosts
	IP    string   // the ip(8) binary
	Argv  []string // the server to run
}

// netBedCommand returns the command that starts argv inside a fresh bed
// whose files live in dir; the caller sets its environment (the server's)
// and stdio. The bed needs root (it makes namespaces).
func netBedCommand(dir string, argv []string) (*exec.Cmd, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("the network test bed needs root to make its namespaces")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		for _, p := range []string{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"} {
			if st, e := os.Stat(p); e == nil && !st.IsDir() {
				ip, err = p, nil
				break
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the network test bed needs ip(8): %w", err)
	}
	cfg := netBedConfig{Hosts: filepath.Join(dir, "hosts"), IP: ip, Argv: argv}
	if err := os.WriteFile(cfg.Hosts, []byte(netBedHosts), 0o644); err != nil {
		return nil, err
	}
	data, _ := json.Marshal(cfg)
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"codex-bench-netbed"}
	cmd.Env = []string{netBedEnv + "=" + string(data)}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS,
		Pdeathsig:  syscall.SIGKILL,
	}
	return cmd, nil
}

// netBedMain is the bed process; it returns the exit status.
func netBedMain() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "netbed: "+format+"\n", args...)
		return 125
	}
	var cfg netBedConfig
	if err := json.Unmarshal([]byte(os.Getenv(netBedEnv)), &cfg); err != nil || len(cfg.Argv) == 0 {
		return fail("config: %v", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail("private mounts: %v", err)
	}
	if err := unix.Mount(cfg.Hosts, "/etc/hosts", "", unix.MS_BIND, ""); err != nil {
		return fail("hosts: %v", err)
	}
	for _, a := range [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", netBedPublic + "/32", "dev", "lo"},
	} {
		if out, err := exec.Command(cfg.IP, a...).CombinedOutput(); err != nil {
			return fail("ip %s: %v: %s", strings.Join(a, " "), err, out)
		}
	}
	l, err := net.Listen("tcp", ":80")
	if err != nil {
		return fail("destination: %v", err)
	}
	// The destination lives as long as the bed process.
	go func() { _ = http.Serve(l, netBedHandler()) }()
	srv := exec.Command(cfg.Argv[0], cfg.Argv[1:]...)
	srv.Stdin, srv.Stdout, srv.Stderr = os.Stdin, os.Stdout, os.Stderr
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, netBedEnv+"=") {
			srv.Env = append(srv.Env, kv)
		}
	}
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		return fail("server: %v", err)
	}
	// SIGTERM to the bed is SIGTERM to the server (the driver's Close).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range sigs {
			_ = srv.Process.Signal(s)
		}
	}()
	err = srv.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		return fail("server: %v", err)
	}
	return 0
}

// netBedHandler answers GET / with a short text and GET /bytes/N with N
// zero bytes.
func netBedHandler() http.Handler {
	block := make([]byte, 256<<10)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n, ok := strings.CutPrefix(r.URL.Path, "/bytes/"); ok {
			size, err := strconv.ParseInt(n, 10, 64)
			if err != nil || size < 0 {
				http.Error(w, "bad size", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Length", n)
			for size > 0 {
				k, err := w.Write(block[:min(size, int64(len(block)))])
				if err != nil {
					return
				}
				size -= int64(k)
			}
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "hello from the bench bed\n")
	})
}
