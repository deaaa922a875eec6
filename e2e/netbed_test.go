package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The network test bed of docs/sandbox.md's Network section (and of the
// reference's probes): a network and mount namespace that the test makes
// itself, with its own addresses on lo and its own /etc/hosts, so that a
// server started in it reaches "public" and "private" destinations that
// exist nowhere else. Nothing a bed test sends leaves the namespace: it has
// no other device and no route.
//
// The bed process is this test binary, re-executed in new network and
// mount namespaces with bedEnv set (TestMain dispatches it before anything
// else): it brings lo up with the addresses, binds the hosts file over
// /etc/hosts, serves the destinations of bedServe, then runs the codex
// server given on its command line as its child, with its own stdio, and
// exits with the child's status.

// bedEnv carries the bed's settings (bedConfig as JSON) to the re-executed
// test binary.
const bedEnv = "CODEX_E2E_NETBED"

// The bed's addresses. bedPublic and bedPublic6 are public addresses that
// exist only inside the bed; the rest are local or private ranges.
const (
	bedPublic  = "93.184.216.34"
	bedPublic6 = "2606:4700:10::7"
	bedPrivate = "10.231.0.1"
	bedLink    = "169.254.7.7"
	bedCGNAT   = "100.64.0.7"
	bedULA     = "fd00::7"
)

// bedAbstract is the name of the bed's abstract Unix greeter, which lives
// in the bed's network namespace.
const bedAbstract = "codex-e2e-greeter"

// bedHosts is the bed's /etc/hosts.
const bedHosts = `127.0.0.1 localhost
::1 localhost
` + bedPublic + ` example.com api.example.com www.example.com evil.example.com other.org sub.other.org api.other.org mixed.example.com
` + bedPublic6 + ` v6.example.com
` + bedPrivate + ` rebind.example.com mixed.example.com
127.0.0.1 loop.example.com
` + bedLink + ` ll.example.com
` + bedCGNAT + ` cgnat.example.com
` + bedULA + ` ula.example.com
`

// bedConfig is what the bed process is told.
type bedConfig struct {
	Hosts string   // the file to bind over /etc/hosts
	Unix  string   // a Unix socket to serve (a greeter), "" for none
	Argv  []string // the server to run
}

// bedServer starts `codex exec-server --listen stdio` (plus args) inside a
// fresh test bed and returns it as a stdio server, with the path of the
// bed's Unix greeter socket. The test is skipped when namespaces cannot be
// made (not root).
func bedServer(t *testing.T, env []string, args ...string) (*stdioServer, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the network test bed needs root to make its namespaces")
	}
	dir := t.TempDir()
	cfg := bedConfig{
		Hosts: filepath.Join(dir, "hosts"),
		Unix:  filepath.Join(dir, "greeter.sock"),
		Argv:  append([]string{binary, "exec-server", "--listen", "stdio"}, args...),
	}
	if err := os.WriteFile(cfg.Hosts, []byte(bedHosts), 0o644); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(cfg)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return startStdioWith(t, self, func(cmd *exec.Cmd) {
		cmd.Args = []string{self}
		cmd.Env = append(cmd.Env, env...)
		cmd.Env = append(cmd.Env, bedEnv+"="+string(data))
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS,
			Pdeathsig:  syscall.SIGKILL,
		}
	}), cfg.Unix
}

// bedRun runs argv to its end inside a fresh test bed with env added to
// the environment, and returns its stdout, stderr and exit status.
func bedRun(t *testing.T, env []string, argv ...string) (stdout, stderr string, code int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the network test bed needs root to make its namespaces")
	}
	dir := t.TempDir()
	cfg := bedConfig{Hosts: filepath.Join(dir, "hosts"), Argv: argv}
	if err := os.WriteFile(cfg.Hosts, []byte(bedHosts), 0o644); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(cfg)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(append([]string{raceEnv, "PATH=/usr/bin:/bin"}, env...), bedEnv+"="+string(data))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// bedMain is the bed process (TestMain calls it when bedEnv is set); it
// returns the exit status.
func bedMain() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "netbed: "+format+"\n", args...)
		return 125
	}
	var cfg bedConfig
	if err := json.Unmarshal([]byte(os.Getenv(bedEnv)), &cfg); err != nil {
		return fail("config: %v", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail("private mounts: %v", err)
	}
	if err := unix.Mount(cfg.Hosts, "/etc/hosts", "", unix.MS_BIND, ""); err != nil {
		return fail("hosts: %v", err)
	}
	ipCmds := [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", bedPublic + "/32", "dev", "lo"},
		{"addr", "add", bedPrivate + "/32", "dev", "lo"},
		{"addr", "add", bedLink + "/32", "dev", "lo"},
		{"addr", "add", bedCGNAT + "/32", "dev", "lo"},
		{"-6", "addr", "add", bedPublic6 + "/128", "dev", "lo"},
		{"-6", "addr", "add", bedULA + "/128", "dev", "lo"},
	}
	ip := "ip" // iproute2: /usr/sbin on some systems, which the bed's PATH lacks
	for _, p := range []string{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"} {
		if _, err := os.Stat(p); err == nil {
			ip = p
			break
		}
	}
	for _, a := range ipCmds {
		if out, err := exec.Command(ip, a...).CombinedOutput(); err != nil {
			return fail("ip %s: %v: %s", strings.Join(a, " "), err, out)
		}
	}
	if err := bedServe(cfg); err != nil {
		return fail("%v", err)
	}
	srv := exec.Command(cfg.Argv[0], cfg.Argv[1:]...)
	srv.Stdin, srv.Stdout, srv.Stderr = os.Stdin, os.Stdout, os.Stderr
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, bedEnv+"=") {
			srv.Env = append(srv.Env, kv)
		}
	}
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := srv.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return fail("server: %v", err)
	}
	return 0
}

// bedServe starts the bed's destinations, which live as long as the bed
// process: HTTP on :80 and :8080 (every address of the bed), HTTPS with a
// self-signed certificate on :443, a raw greeter on :7000 that writes
// "greeter\n" and closes, and the same greeter on the Unix socket and
// on the abstract socket bedAbstract.
//
// The HTTP handler answers "hello <host> <method> <path>\n", except
// /bytes/N, which sends N zero bytes.
func bedServe(cfg bedConfig) error {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n, ok := strings.CutPrefix(r.URL.Path, "/bytes/"); ok {
			size, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				http.Error(w, "bad size", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Length", n)
			_, _ = io.CopyN(w, zeroReader{}, size)
			return
		}
		fmt.Fprintf(w, "hello %s %s %s\n", r.Host, r.Method, r.URL.Path)
	})
	for _, port := range []string{"80", "8080"} {
		l, err := net.Listen("tcp", ":"+port)
		if err != nil {
			return err
		}
		go func() { _ = http.Serve(l, h) }()
	}
	cert, err := selfSigned()
	if err != nil {
		return err
	}
	tl, err := tls.Listen("tcp", ":443", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(tl, h) }()
	greet := func(l net.Listener) {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "greeter\n")
			c.Close()
		}
	}
	gl, err := net.Listen("tcp", ":7000")
	if err != nil {
		return err
	}
	go greet(gl)
	if cfg.Unix != "" {
		ul, err := net.Listen("unix", cfg.Unix)
		if err != nil {
			return err
		}
		go greet(ul)
	}
	al, err := net.Listen("unix", "@"+bedAbstract)
	if err != nil {
		return err
	}
	go greet(al)
	return nil
}

// zeroReader reads zeros.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// selfSigned makes the bed's HTTPS certificate, valid for its names.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "example.com"},
		DNSNames:     []string{"example.com", "*.example.com", "other.org"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// TestNetBed: the bed's destinations answer a command that has the full
// network, by name and by address, and its /etc/hosts is the bed's.
func TestNetBed(t *testing.T) {
	c, _ := bedCx(t, nil)
	probe := `curl -sS --max-time 5 http://api.example.com/a; curl -sS --max-time 5 http://` + bedPrivate + `:8080/b; ` +
		`curl -sS --max-time 5 -g "http://[` + bedPublic6 + `]/c"; curl -sSk --max-time 5 https://other.org/d; ` +
		`exec 3<>/dev/tcp/` + bedLink + `/7000 && cat <&3`
	got := result(t, c.call("command/exec", map[string]any{"command": []string{"/bin/bash", "-c", probe},
		"sandboxPolicy": map[string]any{"type": "dangerFullAccess"}}))
	for _, want := range []string{"hello api.example.com GET /a", "hello " + bedPrivate + ":8080 GET /b",
		"hello [" + bedPublic6 + "] GET /c", "hello other.org GET /d", "greeter"} {
		if !strings.Contains(got, want) {
			t.Errorf("bed answer lacks %q: %s", want, got)
		}
	}
}
