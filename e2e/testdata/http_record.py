# Records http/request probes of the reference exec-server 0.169.0 as
# replay data (http_replay.json): per case, the request and the response
# the reference gave (id stripped), and for a streamed request the
# notifications up to the one with done. The loopback HTTP server below is
# the one e2e/http_test.go rebuilds in Go, path for path; "$URL" stands for
# its http://127.0.0.1:PORT, "$PORT" for its port. Bodies are recorded
# decoded as "body" (text), content-length values of echoed requests as
# "$LEN". RM_TOKEN=s3cr3t-token is in the server's environment.
# Run: python3 http_record.py > http_replay.json
import json, os, socket, subprocess, threading, time, sys, base64
REF = "/tmp/codex-ref-0.169.0/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
raw_log = []
def readreq(c, buf):
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        if not d: return None, b""
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode(errors="replace").split("\r\n")
    cl = 0
    for l in lines[1:]:
        if l.lower().startswith("content-length:"): cl = int(l.split(":")[1])
    while len(rest) < cl:
        d = c.recv(65536)
        if not d: break
        rest += d
    return head + b"\r\n\r\n" + rest[:cl], rest[cl:]
def handle(c):
    c.settimeout(10)
    buf = b""
    try:
      while True:
        raw, buf = readreq(c, buf)
        if raw is None: return
        raw_log.append(raw.decode(errors="replace"))
        path = raw.split(b" ")[1].decode()
        if path.startswith("/status/"):
            code = int(path.split("/")[2])
            c.sendall(b"HTTP/1.1 %d Whatever\r\nContent-Length: 4\r\n\r\nbody" % code)
        elif path.startswith("/redir/"):
            _, _, code, to = path.split("/", 3)
            c.sendall(b"HTTP/1.1 %s Moved\r\nLocation: /%s\r\nContent-Length: 5\r\n\r\nmoved" % (code.encode(), to.encode()))
        elif path.startswith("/abs/"):
            to = path[len("/abs/"):].replace("_", "/")
            c.sendall(b"HTTP/1.1 302 Found\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n" % to.encode())
        elif path.startswith("/loop/"):
            n = int(path.split("/")[2])
            c.sendall(b"HTTP/1.1 302 Found\r\nLocation: /loop/%d\r\nContent-Length: 0\r\n\r\n" % (n+1))
        elif path.startswith("/chunked"):
            c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for i in range(4):
                p = b"part%d\n" % i
                c.sendall(b"%x\r\n%s\r\n" % (len(p), p)); time.sleep(0.05)
            c.sendall(b"0\r\n\r\n")
        elif path.startswith("/slow"):
            time.sleep(1.5)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        elif path.startswith("/stall"):
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab")
            time.sleep(1.5)
            c.sendall(b"cdefghij")
        elif path.startswith("/untilclose"):
            c.sendall(b"HTTP/1.1 200 OK\r\n\r\nuntil close body"); c.shutdown(socket.SHUT_WR); return
        elif path.startswith("/truncated"):
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"); c.shutdown(socket.SHUT_WR); return
        elif path.startswith("/truncchunk"):
            c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"); time.sleep(0.1); c.shutdown(socket.SHUT_WR); return
        elif path.startswith("/gzip"):
            import gzip
            b = gzip.compress(b"zipped", mtime=0)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(b) + b)
        elif path.startswith("/big"):
            n = 3000000
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n + b"x" * n)
        elif path.startswith("/garbage"):
            c.sendall(b"NOT HTTP\r\n\r\n"); return
        elif path.startswith("/nobody"):
            c.sendall(b"HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n")
        elif path.startswith("/continue"):
            c.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        elif path.startswith("/fold"):
            c.sendall(b"HTTP/1.1 200 OK\r\nX-Fold: a\r\n b\r\nContent-Length: 0\r\n\r\n"); return
        elif path.startswith("/empty"):
            c.sendall(b"HTTP/1.1 200 OK\r\nX-Empty:\r\nX-Sp:   v  \r\nContent-Length: 0\r\n\r\n")
        elif path.startswith("/http10"):
            c.sendall(b"HTTP/1.0 200 OK\r\n\r\nten"); c.shutdown(socket.SHUT_WR); return
        else:
            body = raw
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Multi: a\r\nX-MULTI: b\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    except Exception as e:
        pass
    finally:
        c.close()

srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0)); srv.listen(64)
PORT = srv.getsockname()[1]
def serve():
    while True:
        c, _ = srv.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()
threading.Thread(target=serve, daemon=True).start()
env = dict(os.environ, CODEX_HOME=os.popen("mktemp -d").read().strip(), RM_TOKEN="s3cr3t-token")
env.update(EXTRA_ENV if "EXTRA_ENV" in dir() else {})
p = subprocess.Popen([REF, "exec-server", "--listen", "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
nid = [0]
def send(msg):
    p.stdin.write(json.dumps(msg) + "\n"); p.stdin.flush()
def readmsg():
    return json.loads(p.stdout.readline())
def call(method, params, raw=False):
    nid[0] += 1
    m = {"id": nid[0], "method": method}
    if params is not ...: m["params"] = params
    send(m)
    while True:
        r = readmsg()
        if r.get("id") == nid[0]: return r
        print("  notif:", json.dumps(r))

U = "http://127.0.0.1:%d" % PORT
G = {"method":"GET","url":"$URL/echo","requestId":"a"}
def W(**kw):
    d = dict(G); d.update(kw); return {k:v for k,v in d.items() if v is not ...}
ABSENT = "$ABSENT"
CASES = [
 ("pre-init", "gate-initialize", G),
 ("pre-init", "decode-before-gate", {"method":"GET"}),
 ("pre-init", "base64-before-gate", W(bodyBase64="!")),
 ("pre-init", "method-after-gate", W(method="GE T")),
 ("pre-initialized", "gate-initialized", G),
 ("ready", "plain-get", G),
 ("ready", "headers-order-and-case", {"method":"post","url":"$URL/echo?q=1","requestId":"a","headers":[{"name":"X-Zeta","value":"1"},{"name":"Content-Type","value":"text/x"},{"name":"x-zeta","value":"2"},{"name":"Authorization","value":"Bearer ","valueEnvVar":"RM_TOKEN"},{"name":"Host","value":"override"},{"name":"Accept","value":"a/b"},{"name":"User-Agent","value":"ua"}],"bodyBase64":"aGVsbG8="}),
 ("ready", "status-404-is-a-result", W(url="$URL/status/404")),
 ("ready", "status-503-is-a-result", W(url="$URL/status/503")),
 ("ready", "redirect-followed", W(url="$URL/redir/302/echo")),
 ("ready", "redirect-stop", W(url="$URL/redir/302/echo", redirectPolicy="stop")),
 ("ready", "redirect-302-post-becomes-get", W(method="POST", url="$URL/redir/302/echo", bodyBase64="aGk=", headers=[{"name":"Authorization","value":"x"},{"name":"Cookie","value":"c"}])),
 ("ready", "redirect-307-keeps-post", W(method="POST", url="$URL/redir/307/echo", bodyBase64="aGk=", headers=[{"name":"Authorization","value":"x"}])),
 ("ready", "redirect-303-post", W(method="POST", url="$URL/redir/303/echo", bodyBase64="aGk=")),
 ("ready", "redirect-301-post", W(method="POST", url="$URL/redir/301/echo", bodyBase64="aGk=")),
 ("ready", "redirect-308-put", W(method="PUT", url="$URL/redir/308/echo", bodyBase64="aGk=")),
 ("ready", "redirect-loop", W(url="$URL/loop/0")),
 ("ready", "redirect-cross-origin-drops-credentials", W(url="$URL/abs/http:__localhost:$PORT_echo", headers=[{"name":"Authorization","value":"x"},{"name":"Cookie","value":"c"},{"name":"X-Other","value":"o"}])),
 ("ready", "redirect-to-file", W(url="$URL/abs/file:___etc_passwd")),
 ("ready", "chunked", W(url="$URL/chunked")),
 ("ready", "until-close", W(url="$URL/untilclose")),
 ("ready", "truncated-length", W(url="$URL/truncated")),
 ("ready", "truncated-chunked", W(url="$URL/truncchunk")),
 ("ready", "gzip-not-decoded", W(url="$URL/gzip")),
 ("ready", "not-http", W(url="$URL/garbage")),
 ("ready", "no-content", W(url="$URL/nobody")),
 ("ready", "head", W(method="HEAD")),
 ("ready", "interim-100", W(url="$URL/continue")),
 ("ready", "folded-header", W(url="$URL/fold")),
 ("ready", "empty-and-padded-values", W(url="$URL/empty")),
 ("ready", "http-1.0", W(url="$URL/http10")),
 ("ready", "timeout-before-headers", W(url="$URL/slow", timeoutMs=200)),
 ("ready", "timeout-in-body", W(url="$URL/stall", timeoutMs=500)),
 ("ready", "timeout-zero", W(url="$URL/slow", timeoutMs=0)),
 ("ready", "connection-refused", W(url="http://127.0.0.1:1/")),
 ("ready", "fragment-dropped", W(url="$URL/echo#frag")),
 ("ready", "userinfo-basic-auth", W(url="http://u:p@127.0.0.1:$PORT/echo", headers=[{"name":"X-A","value":"1"}])),
 ("ready", "scheme-case", W(url="HTTP://127.0.0.1:$PORT/echo")),
 ("ready", "path-and-query-encoded", W(url="http://localhost:$PORT/ech%20o/\u00fc?x=\u00fc y")),
 ("ready", "triple-slash", W(url="http:///127.0.0.1:$PORT/echo")),
 ("ready", "params-absent", ABSENT),
 ("ready", "params-null", None), ("ready", "params-string", "x"), ("ready", "params-number", 1),
 ("ready", "params-empty-array", []), ("ready", "params-short-array", ["GET"]), ("ready", "params-empty-object", {}),
 ("ready", "missing-method", W(method=...)), ("ready", "missing-url", W(url=...)), ("ready", "missing-requestId", W(requestId=...)),
 ("ready", "method-number", W(method=1)), ("ready", "method-empty", W(method="")), ("ready", "method-space", W(method="GE T")),
 ("ready", "method-newline", W(method="GET\n")), ("ready", "method-non-ascii", W(method="\u00c4")),
 ("ready", "url-empty", W(url="")), ("ready", "url-relative", W(url="/rel")), ("ready", "url-file", W(url="file:///etc/passwd")),
 ("ready", "url-ftp", W(url="ftp://x/")), ("ready", "url-no-host", W(url="http://")), ("ready", "url-ws", W(url="ws://x/")),
 ("ready", "url-number", W(url=1)), ("ready", "url-bad-host", W(url="http://a b/")),
 ("ready", "requestId-number", W(requestId=1)), ("ready", "requestId-null", W(requestId=None)),
 ("ready", "headers-null", W(headers=None)), ("ready", "headers-map", W(headers={})), ("ready", "header-empty", W(headers=[{}])),
 ("ready", "header-no-value", W(headers=[{"name":"a"}])), ("ready", "header-no-name", W(headers=[{"value":"a"}])),
 ("ready", "header-name-space", W(headers=[{"name":"bad name","value":"x"}])), ("ready", "header-name-empty", W(headers=[{"name":"","value":"x"}])),
 ("ready", "header-value-newline", W(headers=[{"name":"x","value":"a\nb"}])), ("ready", "header-value-obs-text", W(headers=[{"name":"x","value":"a\u00e9"}])),
 ("ready", "env-var-unset", W(headers=[{"name":"X-Env","value":"v","valueEnvVar":"RM_UNSET_VAR"}])),
 ("ready", "env-var-null", W(headers=[{"name":"X-Env","value":"v","valueEnvVar":None}])),
 ("ready", "env-var-empty-name", W(headers=[{"name":"X-Env","value":"v","valueEnvVar":""}])),
 ("ready", "name-checked-before-env-var", W(headers=[{"name":"bad name","value":"v","valueEnvVar":"RM_UNSET_VAR"}])),
 ("ready", "env-var-checked-before-value", W(headers=[{"name":"x","value":"a\nb","valueEnvVar":"RM_UNSET_VAR"}])),
 ("ready", "env-var-appended", W(headers=[{"name":"x","value":"a","valueEnvVar":"RM_TOKEN","extra":1}])),
 ("ready", "body-bad-symbol", W(bodyBase64="!")), ("ready", "body-bad-length", W(bodyBase64="a")), ("ready", "body-null", W(bodyBase64=None)),
 ("ready", "body-number", W(bodyBase64=1)), ("ready", "body-empty", W(bodyBase64="")),
 ("ready", "timeout-negative", W(timeoutMs=-1)), ("ready", "timeout-fraction", W(timeoutMs=1.5)), ("ready", "timeout-string", W(timeoutMs="1")),
 ("ready", "timeout-null", W(timeoutMs=None)), ("ready", "stream-null", W(streamResponse=None)), ("ready", "stream-string", W(streamResponse="x")),
 ("ready", "redirect-bogus", W(redirectPolicy="bogus")), ("ready", "redirect-null", W(redirectPolicy=None)),
 ("ready", "redirect-number", W(redirectPolicy=1)), ("ready", "redirect-case", W(redirectPolicy="Follow")),
 ("ready", "url-checked-before-headers", W(url="/rel", headers=[{"name":"bad name","value":"x"}])),
 ("ready", "method-checked-before-url", W(url="/rel", method="GE T")),
 ("ready", "connection-header-kept", W(headers=[{"name":"Connection","value":"close"}])),
 ("ready", "post-empty-body", W(method="POST", bodyBase64="")), ("ready", "post-no-body", W(method="POST")),
 ("ready", "get-with-body", W(bodyBase64="aGk=")), ("ready", "unknown-member", W(extra=1)),
 ("ready", "value-spaces-kept", W(headers=[{"name":"X-Sp","value":" v "}])),
 ("ready", "value-error-keeps-name-case", W(headers=[{"name":"X-Bad","value":"a\u0000b"}])),
 ("ready", "value-del-refused", W(headers=[{"name":"X-Bad","value":"a\u007fb"}])),
 ("ready", "value-tab-kept", W(headers=[{"name":"X-Tab","value":"a\tb"}])),
 ("ready", "url-port-too-large", W(url="http://127.0.0.1:99999/")),
 ("ready", "url-port-not-a-number", W(url="http://x:y/")),
 ("ready", "url-port-empty", W(url="http://127.0.0.1:/", timeoutMs=2000)),
 ("ready", "url-ipv6-refused", W(url="http://[::1]:1/")),
 ("ready", "tls-to-plain-server", W(url="https://127.0.0.1:$PORT/", timeoutMs=2000)),
 ("ready", "stream-chunked", W(url="$URL/chunked", requestId="s1", streamResponse=True)),
 ("ready", "stream-length", W(url="$URL/slow", requestId="s2", streamResponse=True)),
 ("ready", "stream-truncated", W(url="$URL/truncated", requestId="s3", streamResponse=True)),
 ("ready", "stream-timeout-in-body", W(url="$URL/stall", requestId="s4", streamResponse=True, timeoutMs=500)),
 ("ready", "stream-timeout-before-headers", W(url="$URL/slow", requestId="s5", streamResponse=True, timeoutMs=200)),
 ("ready", "stream-no-content", W(url="$URL/nobody", requestId="s6", streamResponse=True)),
 ("ready", "stream-empty-id-after-redirects", W(url="$URL/redir/302/redir/302/echo", requestId="", streamResponse=True)),
 ("ready", "bodyDelta-is-not-a-request", ("http/request/bodyDelta", G)),
]
def subst(o):
    s = json.dumps(o)
    s = s.replace("$URL", U).replace("$PORT", str(PORT))
    return json.loads(s)
def undo(o):
    return json.loads(json.dumps(o).replace(U, "$URL").replace(str(PORT), "$PORT"))
def norm(res):
    r = res.get("result")
    if r is not None:
        if "bodyBase64" in r:
            body = base64.b64decode(r.pop("bodyBase64")).decode("latin-1")
            r["body"] = body
        if r.get("headers") and r.get("body", "").count(" HTTP/1.1\r\n"):
            for h in r["headers"]:
                if h["name"] == "content-length": h["value"] = "$LEN"
    return res
out = {"cases": []}
phase = "pre-init"
for i, (ph, name, req) in enumerate(CASES, 1):
    if ph != phase and phase == "pre-init":
        call("initialize", {"clientName":"record"}); phase = "pre-initialized"
    if ph != phase and phase == "pre-initialized":
        send({"method":"initialized"}); phase = "ready"
    method = "http/request"
    if isinstance(req, tuple): method, req = req
    params = ... if req == ABSENT else subst(req)
    nid[0] += 1
    m = {"id": nid[0], "method": method}
    if params is not ...: m["params"] = params
    send(m)
    notes = []
    res = None
    streamed = isinstance(params, dict) and params.get("streamResponse") is True
    while True:
        r = readmsg()
        if r.get("id") == nid[0]:
            res = r
            if not streamed or "error" in r: break
            continue
        q = r["params"]; q["delta"] = base64.b64decode(q.pop("deltaBase64")).decode("latin-1")
        notes.append(r)
        if q["done"]: break
    res.pop("id")
    case = {"name": name, "phase": ph, "method": method, "request": undo(params) if params is not ... else ABSENT, "expect": undo(norm(res))}
    if notes: case["notifications"] = undo(notes)
    out["cases"].append(case)
p.stdin.close(); p.wait()
print(json.dumps(out, indent=1, ensure_ascii=False))
