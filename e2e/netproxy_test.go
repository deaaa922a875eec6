package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The managed network proxy through the binary, in the network test bed
// (netbed_test.go): process/start with networkProxy, the proxy variables,
// the outcomes of docs/sandbox.md's Network section, the isolation that
// holds whatever enforceManagedNetwork says, and domain review.

// proxySettings is a networkProxy.proxy member with the reference's seven
// required members and domains.
func proxySettings(domains map[string]string, mods ...func(map[string]any)) map[string]any {
	p := map[string]any{"enabled": true, "enableSocks5": true, "enableSocks5Udp": false, "allowUpstreamProxy": false,
		"dangerouslyAllowAllUnixSockets": false, "mode": "full", "allowLocalBinding": false, "domains": domains}
	for _, m := range mods {
		m(p)
	}
	return p
}

// readOnlyNetSandbox is a process/start sandbox that reads everywhere,
// writes nowhere and has the network on.
func readOnlyNetSandbox() map[string]any {
	return map[string]any{"permissions": map[string]any{"type": "managed",
		"file_system": map[string]any{"type": "restricted", "entries": []any{
			map[string]any{"path": map[string]any{"type": "special", "value": map[string]any{"kind": "root"}}, "access": "read"}}},
		"network": "enabled"}, "cwd": "file:///tmp"}
}

// proxiedStart builds process/start params that run script in bash under
// sb with networkProxy np (nil: none).
func proxiedStart(id, script string, sb, np map[string]any) map[string]any {
	p := map[string]any{"processId": id, "argv": []string{"/bin/bash", "-c", script}, "cwd": "file:///tmp",
		"env": map[string]string{"PATH": "/usr/bin:/bin", "HTTP_PROXY": "http://caller.invalid:1"}, "tty": false, "sandbox": sb}
	if np != nil {
		p["networkProxy"] = np
	}
	return p
}

// runProcess starts a process on c and returns its output and exit code
// once it is closed. Each request the server sends meanwhile (a domain
// review) is answered with review's result (raw JSON; "" answers with an
// error, "-" not at all); the server's requests and notifications are kept in c.notifs.
func runProcess(t *testing.T, c *cx, params map[string]any, review func(req map[string]any) string) (string, int) {
	t.Helper()
	pid := params["processId"].(string)
	id := c.send("process/start", params)
	var out strings.Builder
	code := -1
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				t.Fatal("connection closed")
			}
			method, _ := m["method"].(string)
			if method == "" {
				if m["id"] == float64(id) && m["error"] != nil {
					t.Fatalf("process/start: %v", m["error"])
				}
				continue
			}
			c.notifs = append(c.notifs, m)
			p, _ := m["params"].(map[string]any)
			if rid, isReq := m["id"]; isReq {
				ans := ""
				if review != nil {
					ans = review(m)
				}
				rb, _ := json.Marshal(rid)
				if ans == "-" {
					continue
				}
				if ans == "" {
					c.write(fmt.Sprintf(`{"id":%s,"error":{"code":-32603,"message":"no"}}`, rb))
				} else {
					c.write(fmt.Sprintf(`{"id":%s,"result":%s}`, rb, ans))
				}
				continue
			}
			if p["processId"] != pid {
				continue
			}
			switch method {
			case "process/output":
				b, _ := base64.StdEncoding.DecodeString(p["chunk"].(string))
				out.Write(b)
			case "process/exited":
				code = int(p["exitCode"].(float64))
			case "process/closed":
				return out.String(), code
			}
		case <-deadline:
			t.Fatalf("process %s not closed; output so far: %s", pid, out.String())
		}
	}
}

// bedCx starts a server in a fresh test bed and returns a handshaken
// client on its stdio.
// It also returns the path of the bed's Unix greeter socket.
func bedCx(t *testing.T, env []string, args ...string) (*cx, string) {
	t.Helper()
	s, sock := bedServer(t, env, args...)
	c := cxOverStdio(t, s)
	c.call("initialize", map[string]any{"clientName": "e2e", "capabilities": map[string]any{"experimentalApi": true}})
	c.write(`{"method":"initialized","params":{}}`)
	return c, sock
}

// probeLines runs each probe (name, bash command) in one script and returns
// what each printed, trimmed, by name.
func probeLines(t *testing.T, c *cx, id string, sb, np map[string]any, probes [][2]string) map[string]string {
	t.Helper()
	var script strings.Builder
	for _, p := range probes {
		fmt.Fprintf(&script, "printf '\\n@@%s@@ '; { %s ; } 2>&1\n", p[0], p[1])
	}
	out, _ := runProcess(t, c, proxiedStart(id, script.String(), sb, np), nil)
	got := map[string]string{}
	for _, part := range strings.Split(out, "\n@@")[1:] {
		name, rest, _ := strings.Cut(part, "@@ ")
		got[name] = strings.TrimSpace(rest)
	}
	return got
}

// curlCode is a probe printing the HTTP status, x-proxy-error and body of
// a request through the proxy (curl's own proxy handling: absolute-form
// for http://, CONNECT for https://).
func curlCode(url string, extra ...string) string {
	return `curl -s --max-time 5 -k ` + strings.Join(extra, " ") + ` -w ' %{http_code} %header{x-proxy-error} connect=%{http_connect}' '` + url + `'; echo " exit=$?"`
}

// TestNetworkProxyIsolationAndOutcomes: with networkProxy (and without
// enforceManagedNetwork: we isolate regardless, unlike the reference), the
// command gets the proxy variables, reaches allowed hosts through HTTP,
// CONNECT and SOCKS5, gets the reference's refusals for the others, and
// has no other way out: direct TCP and UDP to any address, the host's
// loopback and Unix sockets all fail.
func TestNetworkProxyIsolationAndOutcomes(t *testing.T) {
	c, sock := bedCx(t, nil)
	np := map[string]any{"proxy": proxySettings(map[string]string{
		"*.example.com": "allow", "evil.example.com": "deny", bedPrivate: "allow", "v6.example.com": "allow"})}
	got := probeLines(t, c, "iso", readOnlyNetSandbox(), np, [][2]string{
		{"env", `echo "$HTTP_PROXY|$HTTPS_PROXY|$ALL_PROXY|$NO_PROXY|$CODEX_NETWORK_PROXY_ACTIVE|$CODEX_NETWORK_ALLOW_LOCAL_BINDING"`},
		{"allowed", `curl -sS --max-time 5 http://api.example.com/x`},
		{"allowedPort", `curl -sS --max-time 5 http://www.example.com:8080/p`},
		{"notAllowed", curlCode("http://other.org/")},
		{"denied", curlCode("http://evil.example.com/")},
		{"local", `curl -s --max-time 5 http://rebind.example.com/`},
		{"literal", `curl -sS --max-time 5 http://` + bedPrivate + `:8080/l`},
		{"https", `curl -sSk --max-time 5 https://www.example.com/s`},
		{"connectClosed", curlCode("https://www.example.com:9/")},
		{"connectDenied", curlCode("https://evil.example.com/")},
		{"socks", `curl -sS --max-time 5 -x "$ALL_PROXY" http://api.example.com/y`},
		{"socksRefused", `curl -s --max-time 5 -x "$ALL_PROXY" http://other.org/; echo "exit=$?"`},
		{"v6", `curl -sS --max-time 5 http://v6.example.com/6`},
		{"mixed", curlCode("http://mixed.example.com/")},
		{"ula", curlCode("http://ula.example.com/")},
		{"linkLocal", curlCode("http://ll.example.com/")},
		{"cgnat", curlCode("http://cgnat.example.com/")},
		{"loopName", curlCode("http://loop.example.com/")},
		{"mappedHTTP", curlCode("http://[::ffff:127.0.0.1]/")},
		{"mappedSocks", `curl -s --max-time 5 -x "socks5://${ALL_PROXY#socks5h://}" 'http://[::ffff:127.0.0.1]/'; echo "exit=$?"`},
		{"connectLocal", curlCode("https://rebind.example.com/")},
		{"socksLocal", `curl -s --max-time 5 -x "$ALL_PROXY" http://rebind.example.com/; echo "exit=$?"`},
		{"directTCP", `exec 3<>/dev/tcp/` + bedPublic + `/80`},
		{"directTCP6", `exec 3<>/dev/tcp/` + bedPublic6 + `/80`},
		{"directPrivate", `exec 3<>/dev/tcp/` + bedPrivate + `/8080`},
		{"hostLoopback", `exec 3<>/dev/tcp/127.0.0.1/80`},
		{"udp", `python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("` + bedPublic + `", 53))' 2>&1 | tail -1`},
		{"unix", `python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect("` + sock + `")' 2>&1 | tail -1`},
		{"abstract", `python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect("\0codex-e2e-none")' 2>&1 | tail -1`},
		{"innerLoopback", `python3 -c 'import socket; l=socket.socket(); l.bind(("127.0.0.1",0)); l.listen(); c=socket.create_connection(l.getsockname()); print("inner ok")'`},
	})
	want := map[string]string{
		"allowed":       "hello api.example.com GET /x",
		"allowedPort":   "hello www.example.com:8080 GET /p",
		"notAllowed":    `{"status":"blocked","host":"other.org","reason":"not_allowed","decision":"deny","source":"baseline_policy","protocol":"http","port":80,"message":"Domain not in allowlist."} 403 blocked-by-allowlist connect=000 exit=0`,
		"denied":        `{"status":"blocked","host":"evil.example.com","reason":"denied","decision":"deny","source":"baseline_policy","protocol":"http","port":80,"message":"Domain denied by the sandbox policy."} 403 blocked-by-denylist connect=000 exit=0`,
		"local":         `{"status":"blocked","host":"rebind.example.com","reason":"not_allowed_local","decision":"deny","source":"baseline_policy","protocol":"http","port":80,"message":"Sandbox policy blocks local/private network addresses."}`,
		"literal":       "hello " + bedPrivate + ":8080 GET /l",
		"https":         "hello www.example.com GET /s",
		"connectDenied": "000  connect=403 exit=56",
		"socks":         "hello api.example.com GET /y",
		"v6":            "hello v6.example.com GET /6",
		"innerLoopback": "inner ok",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\n got %q\nwant %q", k, got[k], w)
		}
	}
	patterns := map[string]string{
		"env":           `^http://127\.0\.0\.1:\d+\|http://127\.0\.0\.1:\d+\|socks5h://127\.0\.0\.1:\d+\|\|1\|0$`,
		"connectClosed": `connect=50[24] exit=56$`,
		"socksRefused":  `exit=97$`,
		"socksLocal":    `exit=97$`,
		"mappedSocks":   `exit=97$`,
		"mappedHTTP":    `^invalid Host header 400 `,
		"connectLocal":  `connect=403 exit=56$`,
		"directTCP":     `Network is unreachable`,
		"directTCP6":    `Network is unreachable`,
		"directPrivate": `Network is unreachable`,
		"hostLoopback":  `Connection refused`,
		"udp":           `Network is unreachable`,
		"unix":          `Operation not permitted`,
		"abstract":      `Operation not permitted|Connection refused`,
	}
	// Every local range, by name (matched by *.example.com, one of two
	// addresses, IPv6 ULA, link-local, CGNAT, loopback) is refused on the
	// addresses the proxy resolved, whatever the protocol; an unlisted
	// literal of IPv4 in IPv6 too (SOCKS5 with an IPv6 address; the HTTP
	// proxy refuses a bracketed host with 400, as the reference does).
	for _, k := range []string{"mixed", "ula", "linkLocal", "cgnat", "loopName"} {
		if !strings.Contains(got[k], `"reason":"not_allowed_local"`) || !strings.Contains(got[k], " 403 blocked-by-allowlist ") {
			t.Errorf("%s: %q, want a 403 not_allowed_local", k, got[k])
		}
	}
	for k, re := range patterns {
		if !regexp.MustCompile(re).MatchString(got[k]) {
			t.Errorf("%s: %q does not match %s", k, got[k], re)
		}
	}
}

// TestNetworkProxyReview: with policyDecisionTimeoutMs, a host that is only
// not allowed is put to the client as network/policyRequest; "allow" lets
// the request through (source decider, policyOverride), "deny", an
// undecodable answer and an error answer refuse it; silence refuses it
// after exactly the timeout asked for (the reference adds 5 s); and an
// answer is taken while a process/read long-poll of the same connection
// is parked (the reference queues it behind the read). Every decision is
// also a network/policyDecision notification.
func TestNetworkProxyReview(t *testing.T) {
	// No grace at the end of input: the sleeper below is killed with the
	// test's end instead of running on for the default 5 s.
	c, _ := bedCx(t, nil, "--shutdown-grace", "0")
	// A parked long-poll on the same connection for the whole run.
	sleeper := c.send("process/start", startParams("sl", "/bin/sleep", "30"))
	c.wait(sleeper, 10*time.Second)
	c.send("process/read", map[string]any{"processId": "sl", "afterSeq": 0, "waitMs": 20000})
	np := map[string]any{"proxy": proxySettings(map[string]string{"api.example.com": "allow", "evil.example.com": "deny"}), "policyDecisionTimeoutMs": 700}
	ms := `s=$(date +%s%N); `
	took := `; echo " ms=$(( ($(date +%s%N)-s)/1000000 ))"`
	script := strings.Join([]string{
		`echo "allow: $(` + ms + `curl -s --max-time 8 http://other.org/a | tr -d "\n"` + took + `)"`,
		`echo "deny: $(curl -s --max-time 8 http://sub.other.org/ -w ' %{http_code}')"`,
		`echo "bad: $(curl -s --max-time 8 http://api.other.org/ -w ' %{http_code}')"`,
		`echo "err: $(curl -s --max-time 8 http://www.other.org/ -w ' %{http_code}')"`,
		`echo "silent: $(` + ms + `curl -s --max-time 8 -o /dev/null http://silent.other.org/ -w ' %{http_code}'` + took + `)"`,
		`echo "denylist: $(curl -s --max-time 8 -o /dev/null http://evil.example.com/ -w ' %{http_code}')"`,
	}, "\n")
	var asked []map[string]any
	out, code := runProcess(t, c, proxiedStart("rv", script, readOnlyNetSandbox(), np), func(req map[string]any) string {
		asked = append(asked, req)
		p, _ := req["params"].(map[string]any)
		r, _ := p["request"].(map[string]any)
		switch r["host"] {
		case "other.org":
			return `{"decision":{"type":"allow"}}`
		case "sub.other.org":
			return `{"decision":{"type":"deny"}}`
		case "api.other.org":
			return `{"decision":"allow"}`
		case "silent.other.org":
			return "-"
		}
		return ""
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		lines[k] = v
	}
	if !regexp.MustCompile(`^hello other\.org GET /a ms=\d+$`).MatchString(lines["allow"]) {
		t.Errorf("allow: %q", lines["allow"])
	} else if ms := atoi(lines["allow"][strings.LastIndex(lines["allow"], "=")+1:]); ms > 1000 {
		t.Errorf("an allowed review took %d ms with a process/read parked: the answer waited behind it", ms)
	}
	for _, k := range []string{"deny", "bad", "err"} {
		if !strings.Contains(lines[k], `"source":"decider"`) || !strings.HasSuffix(lines[k], " 403") {
			t.Errorf("%s: %q, want a 403 from the decider", k, lines[k])
		}
	}
	if m := regexp.MustCompile(`^ 403 ms=(\d+)$`).FindStringSubmatch(lines["silent"]); m == nil {
		t.Errorf("silent: %q", lines["silent"])
	} else if ms := atoi(m[1]); ms < 700 || ms > 1700 {
		t.Errorf("silence was refused after %d ms, want the 700 ms asked for", ms)
	}
	if lines["denylist"] != " 403" {
		t.Errorf("denylist: %q", lines["denylist"])
	}
	var hosts []string
	for _, r := range asked {
		p := r["params"].(map[string]any)
		if p["processId"] != "rv" {
			t.Errorf("policyRequest for %v", p["processId"])
		}
		req := p["request"].(map[string]any)
		if req["protocol"] != "http" || req["port"] != float64(80) {
			t.Errorf("policyRequest %v", req)
		}
		hosts = append(hosts, req["host"].(string))
	}
	if want := "other.org sub.other.org api.other.org www.other.org silent.other.org"; strings.Join(hosts, " ") != want {
		t.Errorf("reviewed %v, want %s (never a denied host)", hosts, want)
	}
	var decisions []string
	for _, n := range c.notifs {
		if n["method"] != "network/policyDecision" {
			continue
		}
		p := n["params"].(map[string]any)
		decisions = append(decisions, fmt.Sprintf("%v:%v:%v:%v:%v", p["host"], p["decision"], p["source"], p["reason"], p["policyOverride"]))
	}
	for _, want := range []string{"other.org:allow:decider:not_allowed:true", "sub.other.org:deny:decider:not_allowed:false",
		"evil.example.com:deny:baseline_policy:denied:false"} {
		if !strings.Contains(strings.Join(decisions, " "), want) {
			t.Errorf("no policyDecision %s in %v", want, decisions)
		}
	}
}

// TestNetworkProxyCommandExecConfig: command/exec under a config.toml
// profile whose network goes through the proxy ([features] network_proxy):
// allowed hosts answer, others get the proxy's refusal, nothing else gets
// out; a bad pattern is the reference's error; :danger-full-access keeps the
// whole network; without the feature a narrowing profile is refused.
func TestNetworkProxyCommandExecConfig(t *testing.T) {
	profiles := `
[permissions.net.filesystem]
":root" = "read"
[permissions.net.network]
enabled = true
domains = { "api.example.com" = "allow", "*.other.org" = "allow", "sub.other.org" = "deny" }

[permissions.star.filesystem]
":root" = "read"
[permissions.star.network]
enabled = true
domains = { "*" = "deny" }

[permissions.empty.filesystem]
":root" = "read"
[permissions.empty.network]
enabled = true
`
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("[features]\nnetwork_proxy = true\n"+profiles), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _ := bedCx(t, []string{"CODEX_HOME=" + home})
	probe := `curl -sS --max-time 5 http://api.example.com/e; ` +
		`curl -s --max-time 5 -o /dev/null -w '%{http_code} %header{x-proxy-error}' http://sub.other.org/; echo; ` +
		`curl -s --max-time 5 -o /dev/null -w '%{http_code} %header{x-proxy-error}' http://example.com/; echo; ` +
		`(exec 3<>/dev/tcp/` + bedPublic + `/80) 2>&1 | tail -1 | sed 's/.*: //'`
	run := func(profile string) map[string]any {
		return c.call("command/exec", map[string]any{"command": []string{"/bin/bash", "-c", probe}, "permissionProfile": profile})
	}
	var r struct{ Stdout string }
	if err := json.Unmarshal([]byte(result(t, run("net"))), &r); err != nil {
		t.Fatal(err)
	}
	if want := "hello api.example.com GET /e\n403 blocked-by-denylist\n403 blocked-by-allowlist\nNetwork is unreachable\n"; r.Stdout != want {
		t.Errorf("net profile:\n got %q\nwant %q", r.Stdout, want)
	}
	if err := json.Unmarshal([]byte(result(t, run("empty"))), &r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Stdout, "curl: (56)") && !strings.Contains(r.Stdout, "403 blocked-by-allowlist\n403 blocked-by-allowlist\nNetwork is unreachable") {
		t.Errorf("a profile with no domains reaches something: %q", r.Stdout)
	}
	if got, want := errorOf(run("star")), "-32600 invalid permission profile: network proxy constraints are invalid: invalid value for network.denied_domains: * (allowed exact hosts or scoped wildcards like *.example.com or **.example.com)"; got != want {
		t.Errorf("\"*\" = \"deny\":\n got %s\nwant %s", got, want)
	}
	if err := json.Unmarshal([]byte(result(t, run(":danger-full-access"))), &r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Stdout, "hello api.example.com GET /e\n200 \n200 \n") {
		t.Errorf(":danger-full-access lost the network: %q", r.Stdout)
	}

	// The same profile without the feature is refused, never run with the
	// whole network.
	off := t.TempDir()
	if err := os.WriteFile(filepath.Join(off, "config.toml"), []byte(profiles), 0o600); err != nil {
		t.Fatal(err)
	}
	c2, _ := bedCx(t, []string{"CODEX_HOME=" + off})
	got := errorOf(c2.call("command/exec", map[string]any{"command": []string{"true"}, "permissionProfile": "net"}))
	if !strings.HasPrefix(got, "-32600 invalid permission profile: ") || !strings.Contains(got, "network_proxy") {
		t.Errorf("without the feature: %s", got)
	}
}

// TestNetworkProxyCLISandbox: `codex sandbox --allow-domain` tries a
// domain-filtered network by hand, printing the decisions on stderr, and
// `--permissions-profile` runs a config.toml profile with its proxy.
func TestNetworkProxyCLISandbox(t *testing.T) {
	probe := `curl -sS --max-time 5 http://api.example.com/c; curl -s --max-time 5 -o /dev/null -w '%{http_code}\n' http://other.org/; ` +
		`(exec 3<>/dev/tcp/` + bedPublic + `/80) 2>&1 | tail -1 | sed 's/.*: //'`
	out, errOut, code := bedRun(t, nil, binary, "sandbox", "--allow-domain", "*.example.com", "--deny-domain", "evil.example.com", "--", "/bin/bash", "-c", probe)
	if want := "hello api.example.com GET /c\n403\nNetwork is unreachable\n"; code != 0 || out != want {
		t.Errorf("codex sandbox --allow-domain: exit %d\n got %q\nwant %q\nstderr: %s", code, out, want, errOut)
	}
	for _, want := range []string{"codex sandbox: network: http api.example.com:80 allowed", "codex sandbox: network: http other.org:80 blocked (not_allowed)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q: %s", want, errOut)
		}
	}
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(`
[permissions.p.filesystem]
":root" = "read"
[permissions.p.network]
enabled = true
domains = { "other.org" = "allow" }
`), 0o600); err != nil {
		t.Fatal(err)
	}
	probe = `curl -sS --max-time 5 http://other.org/p; curl -s --max-time 5 -o /dev/null -w '%{http_code}\n' http://api.example.com/`
	out, errOut, code = bedRun(t, []string{"CODEX_HOME=" + home}, binary, "sandbox", "--enable", "network_proxy", "--permissions-profile", "p", "--", "/bin/bash", "-c", probe)
	if want := "hello other.org GET /p\n403\n"; code != 0 || out != want {
		t.Errorf("codex sandbox --permissions-profile: exit %d\n got %q\nwant %q\nstderr: %s", code, out, want, errOut)
	}
}
