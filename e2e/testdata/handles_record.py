# Records file-handle probes (fs/open, fs/readBlock, fs/writeBlock, fs/close)
# of the reference exec-server 0.169.0 as replay data (handles_replay.json):
# the fixture tree and, in order, each request with the reference's
# response (id stripped), and checks of what the files then hold. Paths under
# the fixture root read $ROOT; $SANDBOX and $SANDBOX_HIDDEN stand for the
# sandbox objects below. A response whose chunk is large is kept as its
# length and SHA-256 ("digest").
# Run: python3 handles_record.py > handles_replay.json
import base64, hashlib, json, os, subprocess, sys, tempfile
REF = os.environ.get("BIN", "/tmp/codex-ref-0.169.0/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")

BIG = bytes(i % 251 for i in range((1 << 20) + 5))
FILES = {"a": "hello world", "ws/in.txt": "inside", "out/o.txt": "outside", "ws/secret/s.txt": "sec"}
DIRS = ["ws/.git", "empty"]
FIFOS = ["fifo", "ws/fifo"]
LINKS = {"lnk": "a", "ws/lnk": "$ROOT/out/o.txt", "ws/lnk2": "$ROOT/ws/secret/s.txt"}

def SB(hidden=False):
    entries = [{"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
               {"path": {"type": "path", "path": "file://$ROOT/ws"}, "access": "write"}]
    if hidden:
        entries.append({"path": {"type": "path", "path": "file://$ROOT/ws/secret"}, "access": "none"})
    return {"permissions": {"type": "managed", "file_system": {"type": "restricted", "entries": entries}, "network": "restricted"},
            "cwd": "file://$ROOT/ws", "workspaceRoots": ["file://$ROOT/ws"], "windowsSandboxLevel": "disabled", "useLegacyLandlock": False}

U = lambda rel: "file://$ROOT/" + rel
def O(h, rel, mode=None, **kw):
    p = {"handleId": h, "path": U(rel)}
    if mode is not None: p["mode"] = mode
    p.update(kw)
    return ("fs/open", p)
R = lambda h, off, n: ("fs/readBlock", {"handleId": h, "offset": off, "len": n})
W = lambda h, off, data: ("fs/writeBlock", {"handleId": h, "offset": off, "chunk": base64.b64encode(data).decode()})
WC = lambda h, off, chunk: ("fs/writeBlock", {"handleId": h, "offset": off, "chunk": chunk})
C = lambda h: ("fs/close", {"handleId": h})

# (phase, name, request or ("disk", rel))
CASES = [
    ("pre-init", "gate-initialize", O("g", "a")),
    ("pre-init", "decode-before-gate", ("fs/readBlock", {"handleId": "g", "offset": 0, "len": 0})),
    ("pre-init", "decode-error-before-gate", ("fs/open", {"handleId": 5})),
    ("pre-initialized", "gate-initialized", C("g")),
    ("ready", "open-read", O("h1", "a")),
    ("ready", "read-first", R("h1", 0, 5)),
    ("ready", "read-middle", R("h1", 6, 5)),
    ("ready", "read-ends-at-eof-not-eof", R("h1", 6, 5)),
    ("ready", "read-at-end", R("h1", 11, 5)),
    ("ready", "read-past-end", R("h1", 100, 5)),
    ("ready", "read-len-0", R("h1", 0, 0)),
    ("ready", "read-len-too-big", R("h1", 0, 1048577)),
    ("ready", "read-unknown-len-0", R("zz", 0, 0)),
    ("ready", "write-on-read-handle", W("h1", 0, b"x")),
    ("ready", "read-handle-still-open", R("h1", 0, 1)),
    ("ready", "open-existing-id", O("h1", "a")),
    ("ready", "open-existing-id-missing-path", O("h1", "nope")),
    ("ready", "open-read-fifo", O("f", "fifo")),
    ("ready", "open-replace-fifo", O("f", "fifo", "replace")),
    ("ready", "open-read-dir", O("d", "empty")),
    ("ready", "open-replace-dir", O("d", "empty", "replace")),
    ("ready", "open-read-dev-null", ("fs/open", {"handleId": "n", "path": "file:///dev/null"})),
    ("ready", "open-replace-dev-null", ("fs/open", {"handleId": "n", "path": "file:///dev/null", "mode": "replace"})),
    ("ready", "open-replace-through-link", O("l", "lnk", "replace")),
    ("ready", "replace-truncates-at-open", ("disk", "a")),
    ("ready", "write-past-end", W("l", 3, b"xy")),
    ("ready", "gap-is-nul", ("disk", "a")),
    ("ready", "write-overwrites", W("l", 0, b"ab")),
    ("ready", "written-before-close", ("disk", "a")),
    ("ready", "read-on-replace-handle", R("l", 0, 1)),
    ("ready", "replace-handle-dropped", R("l", 0, 1)),
    ("ready", "close-dropped", C("l")),
    ("ready", "close-unknown", C("zz")),
    ("ready", "open-empty-id", O("", "a")),
    ("ready", "read-empty-id", R("", 0, 2)),
    ("ready", "close-empty-id", C("")),
    ("ready", "open-positional-short", ("fs/open", ["x", U("a")])),
    ("ready", "open-positional-one", ("fs/open", ["x"])),
    ("ready", "open-positional", ("fs/open", ["x2", U("a"), "read", None])),
    ("ready", "open-positional-long", ("fs/open", ["x3", U("a"), "read", None, 5])),
    ("ready", "open-null", ("fs/open", None)),
    ("ready", "open-string", ("fs/open", "x")),
    ("ready", "open-mode-bogus", O("m", "a", "bogus")),
    ("ready", "open-mode-null", ("fs/open", {"handleId": "m", "path": U("a"), "mode": None})),
    ("ready", "open-mode-number", O("m", "a", 5)),
    ("ready", "open-mode-case", O("m", "a", "Read")),
    ("ready", "open-mode-empty", O("m", "a", "")),
    ("ready", "open-mode-bool", O("m", "a", True)),
    ("ready", "open-mode-seq", O("m", "a", ["read"])),
    ("ready", "open-mode-map-replace-1", O("m", "a", {"replace": 1})),
    ("ready", "open-mode-map-empty", O("m", "a", {})),
    ("ready", "open-mode-map-two", O("m", "a", {"read": None, "replace": None})),
    ("ready", "open-mode-map-bogus", O("m", "a", {"bogus": None})),
    ("ready", "open-mode-map-read", O("m", "a", {"read": None})),
    ("ready", "close-m", C("m")),
    ("ready", "open-id-number", ("fs/open", {"handleId": 5, "path": U("a")})),
    ("ready", "open-id-bool", ("fs/open", {"handleId": True, "path": U("a")})),
    ("ready", "open-id-null", ("fs/open", {"handleId": None, "path": U("a")})),
    ("ready", "open-missing-path", ("fs/open", {"handleId": "x9"})),
    ("ready", "open-missing-id", ("fs/open", {"path": U("a")})),
    ("ready", "open-relative", ("fs/open", {"handleId": "x9", "path": "rel"})),
    ("ready", "open-bad-member-first", ("fs/open", {"mode": "bogus", "handleId": 5})),
    ("ready", "open-sandbox-number", O("x9", "a", sandbox=5)),
    ("ready", "open-sandbox-string", O("x9", "a", sandbox="x")),
    ("ready", "open-sandbox-seq", O("x9", "a", sandbox=[])),
    ("ready", "open-unknown-members", O("x", "a", followSymlinks=False, junk=[1])),
    ("ready", "open-trailing-slash", ("fs/open", {"handleId": "q3", "path": U("a") + "/"})),
    ("ready", "open-dot-dot", ("fs/open", {"handleId": "q5", "path": U("x/../a")})),
    ("ready", "open-percent", ("fs/open", {"handleId": "q6", "path": U("%61")})),
    ("ready", "open-missing", O("m2", "nope")),
    ("ready", "open-replace-missing-parent", O("m3", "nodir/x", "replace")),
    ("ready", "open-replace-new", O("w", "new", "replace")),
    ("ready", "new-is-empty", ("disk", "new")),
    ("ready", "read-unknown", R("nope", 0, 1)),
    ("ready", "write-unknown", W("nope", 0, b"x")),
    ("ready", "write-empty", WC("w", 0, "")),
    ("ready", "write-empty-unknown", WC("zz", 0, "")),
    ("ready", "write-empty-at-max", WC("w", 9223372036854775807, "")),
] + [("ready", "write-b64-" + str(i), WC("w", 0, c)) for i, c in enumerate(
    ["e", "!!!!", "eA", "eA=", "eB==", "e A==", "!", "!!!!!", "eA==eA==", "eA=a", "eHk=\n", "eA\n==", "====", "e===", "eHk", "eHkx=", "ZZ==", "Zh==", "Zg=\u00e9", "eHkxe"])] + [
    ("ready", "write-b64-ok-3", WC("w", 0, "eHl6")),
    ("ready", "write-b64-ok-4", WC("w", 3, "eHl6eA==")),
    ("ready", "written", ("disk", "new")),
    ("ready", "write-offset-negative", WC("w", -1, "eA==")),
    ("ready", "write-offset-string", WC("w", "x", "eA==")),
    ("ready", "write-offset-null", WC("w", None, "eA==")),
    ("ready", "write-chunk-null", WC("w", 0, None)),
    ("ready", "write-chunk-number", ("fs/writeBlock", {"chunk": 5})),
    ("ready", "write-id-null", ("fs/writeBlock", {"handleId": None, "offset": 0, "chunk": "eA=="})),
    ("ready", "write-range-max", WC("w", 18446744073709551615, "eA==")),
    ("ready", "write-range-i64", WC("w", 9223372036854775807, "eA==")),
    ("ready", "write-range-two-bytes", WC("w", 9223372036854775806, "eHk=")),
    ("ready", "write-range-unknown", WC("zz", 9223372036854775807, "eA==")),
    ("ready", "write-efbig", WC("w", 9223372036854775806, "eA==")),
    ("ready", "write-efbig-2", WC("w", 4611686018427387904, "eA==")),
    ("ready", "write-after-error", WC("w", 0, "eA==")),
    ("ready", "write-member-order", ("fs/writeBlock", {"chunk": "!", "handleId": "w", "offset": "x"})),
    ("ready", "write-member-order-2", ("fs/writeBlock", {"offset": "x", "chunk": "!"})),
    ("ready", "write-only-chunk", ("fs/writeBlock", {"chunk": "!"})),
    ("ready", "write-duplicate-key", ("fs/writeBlock", {"handleId": "h1", "chunk": "eA==", "offset": 0, "handleId": "w"})),
    ("ready", "write-missing-chunk", ("fs/writeBlock", {"handleId": "w", "offset": 0})),
    ("ready", "write-positional", ("fs/writeBlock", ["w", 0, "eA=="])),
    ("ready", "write-positional-long", ("fs/writeBlock", ["w", 0, "eA==", 5])),
    ("ready", "write-positional-short", ("fs/writeBlock", ["w", 0])),
    ("ready", "write-null", ("fs/writeBlock", None)),
    ("ready", "read-offset-max", R("h1", 18446744073709551615, 1)),
    ("ready", "read-error-drops-handle", R("h1", 0, 1)),
    ("ready", "reopen-h1", O("h1", "ws/in.txt")),
    ("ready", "read-offset-i64", R("h1", 9223372036854775807, 1)),
    ("ready", "reopen-h1-2", O("h1", "ws/in.txt")),
    ("ready", "read-offset-i64-plus", R("h1", 9223372036854775808, 1)),
    ("ready", "reopen-h1-3", O("h1", "ws/in.txt")),
    ("ready", "read-len-negative", R("h1", 0, -1)),
    ("ready", "read-len-string", R("h1", 0, "x")),
    ("ready", "read-len-float", R("h1", 0, 1.5)),
    ("ready", "read-len-huge", R("h1", 0, 18446744073709551616)),
    ("ready", "read-offset-float", R("h1", 1e3, 1)),
    ("ready", "read-offset-bool", R("h1", True, 1)),
    ("ready", "read-offset-seq", R("h1", [], 1)),
    ("ready", "read-len-map", R("h1", 0, {})),
    ("ready", "read-missing-len", ("fs/readBlock", {"handleId": "h1", "offset": 0})),
    ("ready", "read-missing-offset", ("fs/readBlock", {"handleId": "h1", "len": 1})),
    ("ready", "read-missing-id", ("fs/readBlock", {"offset": 0, "len": 1})),
    ("ready", "read-extra-member", ("fs/readBlock", {"handleId": "h1", "offset": 0, "len": 3, "extra": {"x": [1, "]"]}})),
    ("ready", "read-positional", ("fs/readBlock", ["h1", 1, 3])),
    ("ready", "read-positional-long", ("fs/readBlock", ["h1", 0, 1, 5])),
    ("ready", "read-null", ("fs/readBlock", None)),
    ("ready", "close-missing-id", ("fs/close", {})),
    ("ready", "close-null", ("fs/close", None)),
    ("ready", "close-number", ("fs/close", {"handleId": 5})),
    ("ready", "close-positional-empty", ("fs/close", [])),
    ("ready", "close-positional-long", ("fs/close", ["h1", 5])),
    ("ready", "close-positional", ("fs/close", ["h1"])),
    ("ready", "closed-is-unknown", R("h1", 0, 1)),
    ("ready", "open-big", O("big", "big")),
    ("ready", "read-big-1MiB", R("big", 0, 1048576)),
    ("ready", "read-big-tail", R("big", 1048576, 1048576)),
    ("ready", "write-big-1MiB", W("w", 0, BIG[:1 << 20])),
    ("ready", "write-big-too-long", W("w", 0, BIG)),
    ("ready", "close-big", C("big")),
] + [("ready", "limit-open-%d" % i, O("l%d" % i, "a")) for i in range(126)] + [
    ("ready", "limit-existing-id-wins", O("w", "nope")),
    ("ready", "limit-reached", O("more", "nope")),
    ("ready", "limit-close-one", C("l5")),
    ("ready", "limit-freed-missing", O("more", "nope")),
    ("ready", "limit-freed", O("more", "a")),
    ("ready", "limit-reached-again", O("more2", "a")),
] + [("ready", "limit-close-%d" % i, C("l%d" % i)) for i in range(126)] + [
    ("ready", "sandbox-replace-inside", O("sa", "ws/new.txt", "replace", sandbox="$SANDBOX")),
    ("ready", "sandbox-write", W("sa", 0, b"xy")),
    ("ready", "sandbox-written", ("disk", "ws/new.txt")),
    ("ready", "sandbox-read-on-replace", R("sa", 0, 1)),
    ("ready", "sandbox-read-inside", O("sr", "ws/in.txt", sandbox="$SANDBOX")),
    ("ready", "sandbox-read-inside-block", R("sr", 0, 100)),
    ("ready", "sandbox-replace-outside", O("sb", "out/o.txt", "replace", sandbox="$SANDBOX")),
    ("ready", "sandbox-outside-untouched", ("disk", "out/o.txt")),
    ("ready", "sandbox-replace-outside-new", O("sb", "out/new.txt", "replace", sandbox="$SANDBOX")),
    ("ready", "sandbox-outside-new-missing", ("disk", "out/new.txt")),
    ("ready", "sandbox-replace-through-link", O("sc", "ws/lnk", "replace", sandbox="$SANDBOX")),
    ("ready", "sandbox-link-target-untouched", ("disk", "out/o.txt")),
    ("ready", "sandbox-read-through-link", O("sd", "ws/lnk", sandbox="$SANDBOX")),
    ("ready", "sandbox-read-through-link-block", R("sd", 0, 100)),
    ("ready", "sandbox-read-hidden", O("se", "ws/secret/s.txt", sandbox="$SANDBOX_HIDDEN")),
    ("ready", "sandbox-replace-hidden", O("se", "ws/secret/s.txt", "replace", sandbox="$SANDBOX_HIDDEN")),
    ("ready", "sandbox-replace-hidden-new", O("se", "ws/secret/new", "replace", sandbox="$SANDBOX_HIDDEN")),
    ("ready", "sandbox-read-hidden-through-link", O("se", "ws/lnk2", sandbox="$SANDBOX_HIDDEN")),
    ("ready", "sandbox-read-missing", O("se", "ws/missing", sandbox="$SANDBOX")),
    ("ready", "sandbox-read-dir", O("se", "ws", sandbox="$SANDBOX")),
    ("ready", "sandbox-replace-dir", O("se", "ws", "replace", sandbox="$SANDBOX")),
    ("ready", "sandbox-read-fifo", O("se", "ws/fifo", sandbox="$SANDBOX")),
    ("ready", "sandbox-replace-fifo", O("se", "ws/fifo", "replace", sandbox="$SANDBOX")),
    ("ready", "sandbox-replace-dev-null", ("fs/open", {"handleId": "se", "path": "file:///dev/null", "mode": "replace", "sandbox": "$SANDBOX"})),
    ("ready", "sandbox-replace-git", O("se", "ws/.git/config", "replace", sandbox="$SANDBOX")),
    ("ready", "sandbox-null", O("sn", "ws/in.txt", sandbox=None)),
]

def main():
    root = tempfile.mkdtemp()
    sub = lambda s: s.replace("$ROOT", root)
    for rel, text in FILES.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write(text)
    open(os.path.join(root, "big"), "wb").write(BIG)
    for d in DIRS: os.makedirs(os.path.join(root, d), exist_ok=True)
    for f in FIFOS: os.mkfifo(os.path.join(root, f))
    for link, target in LINKS.items(): os.symlink(sub(target), os.path.join(root, link))
    env = dict(os.environ, CODEX_HOME=tempfile.mkdtemp())
    p = subprocess.Popen([REF, "exec-server", "--listen", "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env, cwd=root, text=True)
    def call(msg):
        p.stdin.write(json.dumps(msg) + "\n"); p.stdin.flush()
        return json.loads(p.stdout.readline()) if "id" in msg else None
    undo = lambda s: s.replace(root, "$ROOT")
    out = {"files": FILES, "dirs": DIRS, "fifos": FIFOS, "links": LINKS, "sandbox": SB(), "sandboxHidden": SB(True), "cases": []}
    phase = "pre-init"
    for i, (ph, name, step) in enumerate(CASES, 1):
        if ph != phase and phase == "pre-init":
            call({"id": 0, "method": "initialize", "params": {"clientName": "record"}}); phase = "pre-initialized"
        if ph != phase and phase == "pre-initialized":
            call({"method": "initialized"}); phase = "ready"
        if step[0] == "disk":
            path = os.path.join(root, step[1])
            disk = {"missing": True} if not os.path.exists(path) else {"base64": base64.b64encode(open(path, "rb").read()).decode()}
            out["cases"].append({"name": name, "phase": ph, "disk": step[1], "expect": disk})
            continue
        method, params = step
        req = {"method": method, "params": params}
        wire = json.loads(sub(json.dumps(req).replace('"$SANDBOX_HIDDEN"', json.dumps(SB(True))).replace('"$SANDBOX"', json.dumps(SB()))))
        res = call(dict(wire, id=i)); res.pop("id")
        case = {"name": name, "phase": ph, "request": req}
        chunk = res.get("result", {}).get("chunk") if isinstance(res.get("result"), dict) else None
        if chunk and len(chunk) > 4096:
            data = base64.b64decode(chunk)
            res["result"]["chunk"] = None
            case["digest"] = {"len": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        if len(json.dumps(req)) > 4096:
            case["request"] = {"method": method, "params": dict(params, chunk=None)}
            case["chunkOf"] = {"len": len(base64.b64decode(params["chunk"]))}
        case["expect"] = json.loads(undo(json.dumps(res)))
        out["cases"].append(case)
    p.stdin.close(); p.wait()
    print(json.dumps(out, indent=1))

main()
