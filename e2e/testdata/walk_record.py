# Records fs/walk probes of the reference exec-server 0.169.0 as replay
# data (walk_replay.json): the fixture tree and, per request, the response
# the reference gave (id stripped). Paths under the fixture root read $ROOT.
# Cases with "server": "nobody" ran against a reference started as uid and
# gid 65534 (for unreadable folders: root reads everything); "sandbox"
# cases carry a restricted sandbox that denies $ROOT/s/secret.
# Run (as root): python3 walk_record.py > walk_replay.json
import json, os, subprocess, tempfile
REF = "/tmp/codex-ref-0.169.0/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"

DIRS = ["b/a/b/c", "b/.h/x", "b/b", "t/o/deep", "t/s", "x", "u/a", "u/b", "v/x", "w", "e/empty",
        "p/ok", "p/closed/inner", "p/noexec/inner", "s/pub/x", "s/secret/inner", "s/a", "names"]
FILES = ["b/a.txt", "b/.hf", "b/a/f1", "b/a/b/f2", "b/a/b/c/f3", "b/.h/x/y",
         "t/f", "t/o/o.txt", "t/o/deep/d.txt", "x/f", "x/g", "u/z", "v/x/y", "f.txt",
         "p/ok/f", "p/closed/inner/f", "p/noexec/f",
         "s/pub/x/f", "s/secret/s.txt", "s/secret/inner/deep", "s/a/f", "s/top"]
LINKS = {"t/lo": "o", "t/a_lo": "o", "t/lf": "f", "t/dang": "nope", "t/loop": "loop", "t/lroot": ".",
         "t/lout": "../x", "u/zz": "nope", "v/a": "x", "v/.h": "x", "w/.hl": "../t/o",
         "ldir": "t", "ldang": "nope", "lfile": "f.txt", "p/lclosed": "closed/inner", "p/lx": "../x",
         "s/lsec": "secret", "s/lsecf": "secret/s.txt"}
FIFOS = ["t/fifo", "fifo"]
MODES = {"p/closed": 0o700, "p/noexec": 0o644}
# Printable names only: a name with a tab, newline or carriage return, or
# one that is not UTF-8, is listed by the reference under a different,
# lossy path ([ours], docs/protocol.md §6.11.2).
NAMES = ["sp ace", "pct%41", "hash#", "q?", "semi;", "eq=", "at@", "col:", "amp&", "plus+", "com,", "dol$",
         "ex!", "ap'", "par()", "st*", "tl~", "br[]", "cu{}", "pi|", "ca^", "bt`", 'dq"', "lt<>", "bs\\",
         "é", "Z", "A", "_u", "-d", "a.b", "a-b", "a", "del\x7f", "c\x01", " lead", "trail "]

def SB():
    return {"permissions": {"type": "managed", "file_system": {"type": "restricted", "entries": [
        {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
        {"path": {"type": "path", "path": "file://$ROOT/s/secret"}, "access": "none"}]}, "network": "restricted"},
        "cwd": "file://$ROOT", "workspaceRoots": ["file://$ROOT"], "windowsSandboxLevel": "disabled",
        "useLegacyLandlock": False}

def W(path, sandbox=None, **o):
    opts = {"maxDepth": 10, "maxDirectories": 100, "maxEntries": 1000, "followDirectorySymlinks": False}
    opts.update(o)
    p = {"path": "file://$ROOT/" + path, "options": opts}
    if sandbox is not None:
        p["sandbox"] = sandbox
    return {"method": "fs/walk", "params": p}

def P(params):
    return {"method": "fs/walk", "params": params}

O = {"maxDepth": 1, "maxDirectories": 5, "maxEntries": 5, "followDirectorySymlinks": False}
R = "file://$ROOT/b"

CASES = [
    ("pre-init", "root", "gate-initialize", W("b")),
    ("pre-init", "root", "decode-before-gate", P({"path": R})),
    ("pre-init", "root", "zero-limits-after-gate", W("b", maxEntries=0)),
    ("pre-init", "root", "missing-root-after-gate", W("missing")),
    ("pre-initialized", "root", "gate-initialized", W("b")),
    ("pre-initialized", "root", "decode-before-gate-initialized", P({"path": R, "options": None})),
    ("ready", "root", "basic-breadth-first-sorted", W("b")),
    ("ready", "root", "maxDepth-0", W("b", maxDepth=0)),
    ("ready", "root", "maxDepth-1", W("b", maxDepth=1)),
    ("ready", "root", "prune-hidden", W("b", pruneHiddenDirectories=True)),
    ("ready", "root", "prune-hidden-false", W("b", pruneHiddenDirectories=False)),
]
CASES += [("ready", "root", "maxEntries-%d" % n, W("b", maxEntries=n)) for n in (1, 4, 5, 9, 11, 12, 13)]
CASES += [("ready", "root", "links-nofollow-maxEntries-%d" % n, W("t", maxEntries=n)) for n in (1, 2, 3, 7, 8, 11, 12, 13)]
CASES += [("ready", "root", "links-follow-maxEntries-%d" % n, W("t", followDirectorySymlinks=True, maxDepth=2, maxEntries=n))
          for n in (1, 4, 5, 6, 7, 9, 10, 13, 14, 15)]
CASES += [("ready", "root", "links-follow-maxDirectories-%d" % n, W("t", followDirectorySymlinks=True, maxDirectories=n)) for n in (1, 2, 3, 4, 5)]
CASES += [("ready", "root", "links-nofollow-maxDirectories-%d" % n, W("t", maxDirectories=n)) for n in (1, 2, 3, 4)]
CASES += [
    ("ready", "root", "follow-descends-once", W("t", followDirectorySymlinks=True)),
    ("ready", "root", "links-nofollow", W("t")),
]
CASES += [("ready", "root", "dangling-after-budget-%d" % n, W("u", maxEntries=n)) for n in (1, 2, 3, 4)]
CASES += [
    ("ready", "root", "dangling-after-budget-depth0-2", W("u", maxEntries=2, maxDepth=0)),
    ("ready", "root", "dangling-after-budget-depth0-3", W("u", maxEntries=3, maxDepth=0)),
]
CASES += [("ready", "root", "link-before-target-maxDirectories-%d" % n, W("v", followDirectorySymlinks=True, maxDirectories=n)) for n in (1, 2, 3)]
CASES += [
    ("ready", "root", "prune-hidden-link-then-target", W("v", followDirectorySymlinks=True, pruneHiddenDirectories=True)),
    ("ready", "root", "prune-hidden-link", W("w", followDirectorySymlinks=True, pruneHiddenDirectories=True)),
    ("ready", "root", "hidden-link-followed", W("w", followDirectorySymlinks=True)),
    ("ready", "root", "empty-queued-maxDirectories-1", W("e", maxDirectories=1)),
    ("ready", "root", "empty-queued-maxDirectories-1-maxEntries-1", W("e", maxDirectories=1, maxEntries=1)),
    ("ready", "root", "empty-queued-maxDirectories-2-maxEntries-1", W("e", maxDirectories=2, maxEntries=1)),
    ("ready", "root", "names-percent-encoding", W("names")),
]
for r in ["e", "f.txt", "ldir", "ldang", "lfile", "fifo", "missing", "missing/x", "f.txt/x", "t/", "t/o/.."]:
    CASES.append(("ready", "root", "root-" + r, W(r)))
    CASES.append(("ready", "root", "root-" + r + "-follow", W(r, followDirectorySymlinks=True)))
CASES += [
    ("ready", "root", "missing-path", P({"options": O})),
    ("ready", "root", "missing-options", P({"path": R})),
    ("ready", "root", "options-string", P({"path": R, "options": "x"})),
    ("ready", "root", "options-null", P({"path": R, "options": None})),
    ("ready", "root", "options-empty", P({"path": R, "options": {}})),
    ("ready", "root", "missing-maxDirectories", P({"path": R, "options": {"maxDepth": 1}})),
    ("ready", "root", "missing-maxEntries", P({"path": R, "options": {"maxDepth": 1, "maxDirectories": 1}})),
    ("ready", "root", "missing-followDirectorySymlinks", P({"path": R, "options": {"maxDepth": 1, "maxDirectories": 1, "maxEntries": 1}})),
    ("ready", "root", "negative", P({"path": R, "options": dict(O, maxDepth=-1)})),
    ("ready", "root", "fraction", P({"path": R, "options": dict(O, maxDepth=1.5)})),
    ("ready", "root", "depth-string", P({"path": R, "options": dict(O, maxDepth="1")})),
    ("ready", "root", "depth-null", P({"path": R, "options": dict(O, maxDepth=None)})),
    ("ready", "root", "directories-string", P({"path": R, "options": {"maxDirectories": "x"}})),
    ("ready", "root", "entries-u64-max", P({"path": R, "options": dict(O, maxEntries=18446744073709551615)})),
    ("ready", "root", "entries-above-u64", P({"path": R, "options": dict(O, maxEntries=18446744073709551616)})),
    ("ready", "root", "follow-null", P({"path": R, "options": dict(O, followDirectorySymlinks=None)})),
    ("ready", "root", "follow-number", P({"path": R, "options": dict(O, followDirectorySymlinks=1)})),
    ("ready", "root", "prune-null", P({"path": R, "options": dict(O, pruneHiddenDirectories=None)})),
    ("ready", "root", "prune-string", P({"path": R, "options": dict(O, pruneHiddenDirectories="x")})),
    ("ready", "root", "unknown-option-ignored", P({"path": R, "options": dict(O, extra=1)})),
    ("ready", "root", "unknown-member-ignored", P({"path": R, "options": O, "extra": 1})),
    ("ready", "root", "sandbox-string", P({"path": R, "options": O, "sandbox": "x"})),
    ("ready", "root", "sandbox-null", P({"path": R, "options": O, "sandbox": None})),
    ("ready", "root", "path-relative", P({"path": "rel", "options": O})),
    ("ready", "root", "path-http", P({"path": "http://x/y", "options": O})),
    ("ready", "root", "path-other-host", P({"path": "file://host/y", "options": O})),
    ("ready", "root", "path-number", P({"path": 1, "options": O})),
    ("ready", "root", "path-null", P({"path": None, "options": O})),
    ("ready", "root", "positional-2", P([R, O])),
    ("ready", "root", "positional-3", P([R, O, None])),
    ("ready", "root", "positional-4", P([R, O, None, 1])),
    ("ready", "root", "positional-sandbox-string", P([R, O, "x"])),
    ("ready", "root", "params-null", P(None)),
    ("ready", "root", "params-absent", {"method": "fs/walk"}),
    ("ready", "root", "params-string", P("x")),
    ("ready", "root", "options-positional-4", P({"path": R, "options": [1, 2, 3, True]})),
    ("ready", "root", "options-positional-5", P({"path": R, "options": [1, 2, 3, True, True]})),
    ("ready", "root", "options-positional-3", P({"path": R, "options": [1, 2, 3]})),
    ("ready", "root", "options-positional-6", P({"path": R, "options": [1, 2, 3, True, True, 1]})),
    ("ready", "root", "options-positional-null-prune", P({"path": R, "options": [1, 2, 3, True, None]})),
    ("ready", "root", "options-positional-negative", P({"path": R, "options": [-1, 2, 3, True]})),
    ("ready", "root", "zero-entries", W("b", maxEntries=0)),
    ("ready", "root", "zero-directories", W("b", maxDirectories=0)),
    ("ready", "root", "zero-before-exceed", W("b", maxEntries=0, maxDepth=65)),
    ("ready", "root", "zero-before-missing-root", W("missing", maxDirectories=0)),
    ("ready", "root", "exceed-before-missing-root", W("missing", maxEntries=50001)),
    ("ready", "root", "depth-64", W("b", maxDepth=64)),
    ("ready", "root", "depth-65", W("b", maxDepth=65)),
    ("ready", "root", "directories-10000", W("b", maxDirectories=10000)),
    ("ready", "root", "directories-10001", W("b", maxDirectories=10001)),
    ("ready", "root", "entries-50000", W("b", maxEntries=50000)),
    ("ready", "root", "entries-50001", W("b", maxEntries=50001)),
    ("ready", "root", "depth-2^63", W("b", maxDepth=2**63)),
    # A restricted sandbox that denies s/secret (a read-only tree).
    ("ready", "root", "sandbox-denied-folder", W("s", SB())),
    ("ready", "root", "sandbox-denied-folder-follow", W("s", SB(), followDirectorySymlinks=True)),
    ("ready", "root", "sandbox-root-denied", W("s/secret", SB())),
    ("ready", "root", "sandbox-root-inside-denied", W("s/secret/inner", SB())),
    ("ready", "root", "sandbox-missing-inside-denied", W("s/secret/nope", SB())),
    ("ready", "root", "sandbox-root-link-to-denied", W("s/lsec", SB(), followDirectorySymlinks=True)),
    ("ready", "root", "sandbox-root-link-to-denied-nofollow", W("s/lsec", SB())),
]
CASES += [("ready", "root", "sandbox-maxEntries-%d" % n, W("s", SB(), maxEntries=n)) for n in (1, 2, 6, 7, 8)]
CASES += [("ready", "root", "sandbox-maxDirectories-%d" % n, W("s", SB(), maxDirectories=n)) for n in (1, 3, 4)]
CASES += [("ready", "nobody", "unreadable-" + name, req) for name, req in [
    ("folders", W("p")),
    ("folders-follow", W("p", followDirectorySymlinks=True)),
    ("maxDirectories-1", W("p", maxDirectories=1)),
    ("maxDirectories-2", W("p", maxDirectories=2)),
    ("maxDirectories-3", W("p", maxDirectories=3)),
    ("maxDirectories-4", W("p", maxDirectories=4)),
    ("maxEntries-2", W("p", maxEntries=2)),
    ("maxEntries-3", W("p", maxEntries=3)),
    ("maxEntries-4", W("p", maxEntries=4)),
    ("maxEntries-5", W("p", maxEntries=5)),
    ("maxEntries-6", W("p", maxEntries=6)),
    ("root-closed", W("p/closed")),
    ("root-unsearchable", W("p/noexec")),
    ("root-inside-closed", W("p/closed/inner")),
    ("root-inside-unsearchable", W("p/noexec/f")),
    ("root-link-to-closed", W("p/lclosed")),
    ("root-link-to-closed-follow", W("p/lclosed", followDirectorySymlinks=True)),
]]

def build(root):
    for d in DIRS:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for f in FILES:
        open(os.path.join(root, f), "w").write("x")
    for l, t in LINKS.items():
        os.symlink(t, os.path.join(root, l))
    for f in FIFOS:
        os.mkfifo(os.path.join(root, f))
    for n in NAMES:
        open(os.path.join(root, "names", n), "w").write("x")
    for d, m in MODES.items():
        os.chmod(os.path.join(root, d), m)

class Server:
    def __init__(self, nobody, cwd):
        home = tempfile.mkdtemp()
        os.chmod(home, 0o777)
        pre = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if nobody else []
        self.p = subprocess.Popen(pre + [REF, "exec-server", "--listen", "stdio"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd, text=True,
                                  env=dict(os.environ, CODEX_HOME=home, HOME=home))
        self.phase = "pre-init"

    def call(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline()) if "id" in msg else None

    def to(self, phase):
        if self.phase == "pre-init" and phase != "pre-init":
            self.call({"id": 0, "method": "initialize", "params": {"clientName": "record"}})
            self.phase = "pre-initialized"
        if self.phase == "pre-initialized" and phase == "ready":
            self.call({"method": "initialized"})
            self.phase = "ready"

root = tempfile.mkdtemp()
os.chmod(root, 0o755)
build(root)
servers = {"root": Server(False, root), "nobody": Server(True, root)}
sub = lambda s: s.replace("$ROOT", root)
out = {"dirs": DIRS, "files": FILES, "links": LINKS, "fifos": FIFOS, "names": NAMES,
       "modes": {k: oct(v) for k, v in MODES.items()}, "cases": []}
for i, (phase, server, name, req) in enumerate(CASES, 1):
    s = servers[server]
    s.to(phase)
    req = json.loads(sub(json.dumps(req)))
    res = s.call(dict(req, id=i))
    res.pop("id")
    undo = lambda v: json.loads(json.dumps(v).replace(root, "$ROOT"))
    out["cases"].append({"name": name, "phase": phase, "server": server, "request": undo(req), "expect": undo(res)})
for s in servers.values():
    s.p.stdin.close()
    s.p.wait()
print(json.dumps(out, indent=1, ensure_ascii=False))
