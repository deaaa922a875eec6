# Records environmentConfig/read probes of the reference exec-server 0.169.0
# as replay data (envconfig_replay.json): the files of the fixture tree and,
# per request, the response the reference gave (id stripped). Paths under
# the fixture root read $ROOT, the host name $HOSTNAME.
# Run: python3 envconfig_record.py > envconfig_replay.json
import json, os, socket, subprocess, tempfile
REF = "/tmp/codex-ref-0.169.0/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"

USER = '''model = "o3"
[features]
foo = true
bar = 1
[mcp_servers.u]
command = "u"
args = ["a","b"]
env = { X = "1", Y = "2" }
[mcp_servers.v]
url = "http://x"
[mcp_servers.v.http_headers]
A = "b"
[projects."$ROOT/repo"]
trust_level = "trusted"
[projects."$ROOT/untrusted"]
trust_level = "untrusted"
[projects."$ROOT/bad"]
trust_level = "trusted"
[projects."$ROOT/emptygit"]
trust_level = "trusted"
[projects."$ROOT/outer"]
trust_level = "trusted"
'''
FILES = {
    "home/.codex/config.toml": USER,
    "repo/.git": "gitdir: /nowhere\n",
    "repo/.codex/config.toml": 'a = "root"\nb = 1\n[mcp_servers.r]\ncommand = "r"\n',
    "repo/pkg/.codex/config.toml": 'a = "pkg"\n[mcp_servers.p]\ncommand = "p"\nenabled = false\n',
    "repo/pkg/sub/.keep": "",
    "untrusted/.git": "gitdir: /nowhere\n",
    "untrusted/.codex/config.toml": 'a = "untrusted"\n',
    "bad/.git": "gitdir: /nowhere\n",
    "bad/.codex/config.toml": "a = \n",
    "emptygit/.codex/config.toml": 'a = "emptygit"\n',
    "emptygit/sub/.codex/config.toml": 'a = "emptygit/sub"\n',
    "outer/inner/.git": "gitdir: /nowhere\n",
    "outer/inner/.codex/config.toml": 'a = "inner"\n',
    "outer/.codex/config.toml": 'a = "outer"\n',
}
DIRS = ["emptygit/sub/.git"]  # an empty .git folder: no repository
LINKS = {"repolink": "repo"}

def R(cwd, cfg, req="unset"):
    p = {"cwd": "file://$ROOT/" + cwd, "configPaths": cfg, "requirementsPaths": req if req != "unset" else []}
    return {"method": "environmentConfig/read", "params": p}

CASES = [
    ("pre-init", "gate-initialize", R("home", [["model"]])),
    ("pre-init", "decode-before-gate", {"method": "environmentConfig/read", "params": {"cwd": "file:///x"}}),
    ("pre-init", "empty-paths-after-gate", R("home", [])),
    ("pre-initialized", "gate-initialized", R("home", [["model"]])),
    ("ready", "cli-mcp-servers", R("repo/pkg", [["mcp_servers"]], [["mcp_servers"]])),
    ("ready", "user-layer-filtered", R("home", [["model"], ["features", "foo"]])),
    ("ready", "path-through-scalar-and-missing-subkey", R("home", [["mcp_servers", "u", "command", "deeper"], ["features", "nope"]])),
    ("ready", "path-order-is-file-order", R("home", [["mcp_servers", "v"], ["model"]])),
    ("ready", "duplicate-paths", R("home", [["model"], ["model"]])),
    ("ready", "no-such-key", R("home", [["nothing"]])),
    ("ready", "requirements-only", R("home", [], [["mcp_servers"]])),
    ("ready", "cwd-missing-folder", R("home/no/such/dir", [["model"]])),
    ("ready", "project-layers", R("repo/pkg/sub", [["a"]])),
    ("ready", "project-root-only", R("repo", [["b"], ["a"]])),
    ("ready", "project-mcp-servers", R("repo/pkg/sub", [["mcp_servers"]], [["mcp_servers"]])),
    ("ready", "untrusted-project", R("untrusted", [["a"]])),
    ("ready", "empty-git-folder-is-no-root", R("emptygit/sub", [["a"]])),
    ("ready", "trust-is-not-inherited-from-above-the-root", R("outer/inner", [["a"]])),
    ("ready", "trusted-folder-outside-a-repository", R("outer", [["a"]])),
    ("ready", "trust-through-a-symlink", R("repolink/pkg", [["a"]])),
    ("ready", "bad-project-file", R("bad", [["a"]])),
    ("ready", "both-lists-empty", R("home", [], [])),
    ("ready", "empty-key-path", R("home", [[]])),
    ("ready", "empty-requirements-key-path", R("home", [["a"]], [[]])),
    ("ready", "number-segment", R("home", [[1]])),
    ("ready", "string-path", R("home", ["model"])),
    ("ready", "missing-cwd", {"method": "environmentConfig/read", "params": {"configPaths": [], "requirementsPaths": []}}),
    ("ready", "missing-configPaths", {"method": "environmentConfig/read", "params": {"cwd": "file:///x", "requirementsPaths": []}}),
    ("ready", "missing-requirementsPaths", {"method": "environmentConfig/read", "params": {"cwd": "file:///x", "configPaths": []}}),
    ("ready", "relative-cwd", {"method": "environmentConfig/read", "params": {"cwd": "rel", "configPaths": [["a"]], "requirementsPaths": []}}),
    ("ready", "params-null", {"method": "environmentConfig/read", "params": None}),
    ("ready", "params-absent", {"method": "environmentConfig/read"}),
    ("ready", "params-string", {"method": "environmentConfig/read", "params": "x"}),
    ("ready", "params-number", {"method": "environmentConfig/read", "params": 1}),
    ("ready", "params-array-short", {"method": "environmentConfig/read", "params": ["file:///x", [["a"]]]}),
    ("ready", "params-array-of-three", {"method": "environmentConfig/read", "params": ["file://$ROOT/home", [["model"]], []]}),
    ("ready", "configPaths-boolean", R("home", True)),
    ("ready", "configPaths-map", R("home", {})),
    ("ready", "configPaths-null", R("home", None)),
    ("ready", "configPaths-string", R("home", "s")),
    ("ready", "key-path-boolean", R("home", [True])),
    ("ready", "key-path-null", R("home", [None])),
    ("ready", "segment-boolean", R("home", [[True]])),
    ("ready", "segment-null", R("home", [[None]])),
    ("ready", "segment-map", R("home", [[{}]])),
    ("ready", "segment-sequence", R("home", [[[]]])),
    ("ready", "segment-float", R("home", [[1.5]])),
    ("ready", "second-segment-number", R("home", [["a", 1]])),
    ("ready", "second-path-string", R("home", [["a"], "b"])),
    ("ready", "requirementsPaths-null", R("home", [["a"]], None)),
    ("ready", "cwd-number", {"method": "environmentConfig/read", "params": {"cwd": 1}}),
    ("ready", "cwd-null", {"method": "environmentConfig/read", "params": {"cwd": None, "configPaths": [], "requirementsPaths": []}}),
    ("ready", "bad-member-before-missing", {"method": "environmentConfig/read", "params": {"configPaths": 1}}),
    ("ready", "unknown-members-ignored", {"method": "environmentConfig/read", "params": {"x": 1, "cwd": "file://$ROOT/home", "configPaths": [["model"]], "requirementsPaths": []}}),
]
# Texts that are the TOML parser's own: only their prefix is held to the reference.
PREFIX = {"bad-project-file": "failed to load executor-local config: Error parsing project config file $ROOT/bad/.codex/config.toml: "}

root = tempfile.mkdtemp()
sub = lambda s: s.replace("$ROOT", root)
for rel, text in FILES.items():
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "w").write(sub(text))
for d in DIRS:
    os.makedirs(os.path.join(root, d), exist_ok=True)
for link, target in LINKS.items():
    os.symlink(target, os.path.join(root, link))
env = dict(os.environ, HOME=root + "/home", CODEX_HOME=root + "/home/.codex")
p = subprocess.Popen([REF, "exec-server", "--listen", "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, env=env, cwd=root, text=True)
def call(msg):
    p.stdin.write(json.dumps(msg) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline()) if "id" in msg else None
out = {"files": FILES, "dirs": DIRS, "links": LINKS, "cases": []}
phase = "pre-init"
for i, (ph, name, req) in enumerate(CASES, 1):
    if ph != phase and phase == "pre-init":
        call({"id": 0, "method": "initialize", "params": {"clientName": "record"}}); phase = "pre-initialized"
    if ph != phase and phase == "pre-initialized":
        call({"method": "initialized"}); phase = "ready"
    req = json.loads(sub(json.dumps(req)))
    res = call(dict(req, id=i)); res.pop("id")
    undo = lambda s: s.replace(root, "$ROOT").replace('"hostname": "%s"' % socket.gethostname(), '"hostname": "$HOSTNAME"')
    case = {"name": name, "phase": ph, "request": json.loads(undo(json.dumps(req))), "expect": json.loads(undo(json.dumps(res)))}
    if name in PREFIX:
        case["expect"]["error"]["message"] = PREFIX[name]; case["messagePrefix"] = True
    out["cases"].append(case)
p.stdin.close(); p.wait()
print(json.dumps(out, indent=1))
