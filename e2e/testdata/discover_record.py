# Records capabilities/discoverV2 probes of the reference exec-server
# 0.169.0 as replay data (discover_replay.json): the fixture's files and
# links and, per request, the response the reference gave (id stripped).
# The server runs with HOME=$ROOT/home and CODEX_HOME=$ROOT/home/.codex;
# paths under the fixture read $ROOT.
# Run: python3 discover_record.py > discover_replay.json
import json, os, subprocess, tempfile
REF = "/tmp/codex-ref-0.169.0/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"

def fm(body):
    return "---\n" + body + "---\nThe skill's text.\n"

S = "home/.codex/skills/"
FILES = {
    S + "b/SKILL.md": fm("name: bskill\ndescription: b one\n"),
    S + "a/SKILL.md": fm("name: zskill\ndescription: a one\nmetadata:\n  short-description: short a\n"),
    S + "noname/SKILL.md": fm("description: no name\n"),
    S + "emptyname/SKILL.md": fm('name: ""\ndescription: d\n'),
    S + "nodesc/SKILL.md": fm("name: nodesc\n"),
    S + "emptydesc/SKILL.md": fm('name: emptydesc\ndescription: ""\n'),
    S + "nofm/SKILL.md": "just text\n",
    S + "unclosed/SKILL.md": "---\nname: x\ndescription: y\n",
    S + "leadingline/SKILL.md": "\n" + fm("name: lead\ndescription: d\n"),
    S + "badyaml/SKILL.md": fm("name: [unclosed\n"),
    S + "crlf/SKILL.md": "---\r\nname: crlf\r\ndescription: crlf d\r\n---\r\n",
    S + "nested/deeper/SKILL.md": fm("name: deep\ndescription: deep one\n"),
    S + "inner/SKILL.md": fm("name: outer\ndescription: d\n"),
    S + "inner/sub/SKILL.md": fm("name: innersub\ndescription: d\n"),
    S + ".hidden/SKILL.md": fm("name: hidden\ndescription: hidden one\n"),
    S + ".system/sys/SKILL.md": fm("name: sys\ndescription: sys one\n"),
    S + "lower/skill.md": fm("name: lower\ndescription: lower one\n"),
    S + "SKILL.md": fm("name: top\ndescription: top one\n"),
    S + "dup/SKILL.md": fm("name: bskill\ndescription: dup name\n"),
    S + "n64/SKILL.md": fm("name: " + "n" * 64 + "\ndescription: d\n"),
    S + "n65/SKILL.md": fm("name: " + "n" * 65 + "\ndescription: d\n"),
    S + "longdesc/SKILL.md": fm("name: longdesc\ndescription: " + "d" * 3000 + "\n"),
    S + "upper/SKILL.md": fm("name: Upper Case Name!\ndescription: d\n"),
    S + "numbers/SKILL.md": fm("name: 123\ndescription: 456\n"),
    S + "multiline/SKILL.md": fm("name: multi\ndescription: |\n  line one\n  line two\n"),
    S + "extra/SKILL.md": fm('name: extra\ndescription: "quoted: desc"\nlicense: MIT\nallowed-tools: [x]\n'),
    S + "pol/SKILL.md": fm("name: pol\ndescription: pol one\n"),
    S + "pol/agents/openai.yaml": "policy:\n  allow_implicit_invocation: false\ndependencies:\n  tools:\n    - type: mcp\n      value: foo\n",
    S + "oy/SKILL.md": fm("name: oy\ndescription: d\n"),
    S + "oy/agents/openai.yaml": "interface:\n  display_name: OY\n  short_description: from yaml\npolicy:\n  allow_implicit_invocation: true\n  products: [codex]\ndependencies:\n  tools:\n    - type: env_var\n      value: FOO\n      description: a var\n    - type: mcp\n      value: srv\n      transport: streamable_http\n      url: http://x\n      command: cmd\n",
    "home/.agents/skills/ua/SKILL.md": fm("name: agentskill\ndescription: agent one\n"),
    "repo/.agents/skills/rs/SKILL.md": fm("name: reposkill\ndescription: repo one\n"),
    "elsewhere/linked/SKILL.md": fm("name: linked\ndescription: linked one\n"),
}
for k in range(1, 9):
    FILES[S + "/".join("k%d_%d" % (k, i) for i in range(k)) + "/SKILL.md"] = fm("name: depth%d\ndescription: d\n" % k)
DIRS = ["repo/.git"]
LINKS = {S + "ln": "../../../elsewhere/linked", S + "loop": "."}

def SB(none):
    entries = [{"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}]
    entries += [{"path": {"type": "path", "path": "file://$ROOT/" + n}, "access": "none"} for n in none]
    return {"permissions": {"type": "managed", "file_system": {"type": "restricted", "entries": entries}, "network": "restricted"},
            "cwd": "file://$ROOT", "workspaceRoots": ["file://$ROOT"], "windowsSandboxLevel": "disabled", "useLegacyLandlock": False}

def D(params):
    return {"method": "capabilities/discoverV2", "params": params}

CASES = [
    ("pre-init", "gate-initialize", D({"cwd": "file://$ROOT/repo"})),
    ("pre-init", "decode-before-gate", D({})),
    ("pre-initialized", "gate-initialized", D({"cwd": "file://$ROOT/repo"})),
    ("ready", "skills", D({"cwd": "file://$ROOT/repo"})),
    ("ready", "missing-cwd-folder", D({"cwd": "file://$ROOT/nope"})),
    ("ready", "sandbox-null", D({"cwd": "file://$ROOT/repo", "sandbox": None})),
    ("ready", "sandbox-denies-codex-home-skills", D({"cwd": "file://$ROOT/repo", "sandbox": SB(["home/.codex/skills"])})),
    ("ready", "sandbox-denies-a-skill-metadata", D({"cwd": "file://$ROOT/repo", "sandbox": SB(["home/.codex/skills/oy/agents"])})),
    ("ready", "missing-cwd", D({})),
    ("ready", "params-null", D(None)),
    ("ready", "params-string", D("x")),
    ("ready", "cwd-relative", D({"cwd": "x"})),
    ("ready", "cwd-number", D({"cwd": 1})),
    ("ready", "sandbox-string", D({"cwd": "file://$ROOT/repo", "sandbox": "x"})),
    ("ready", "positional-1", D(["file://$ROOT/repo"])),
    ("ready", "positional-2", D(["file://$ROOT/repo", None])),
    ("ready", "positional-3", D(["file://$ROOT/repo", None, 1])),
    ("ready", "unknown-member-ignored", D({"cwd": "file://$ROOT/repo", "x": 1})),
]

root = tempfile.mkdtemp()
for rel, text in FILES.items():
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "w", newline="").write(text)
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
sub = lambda s: s.replace("$ROOT", root)
out = {"files": FILES, "dirs": DIRS, "links": LINKS, "cases": []}
phase = "pre-init"
for i, (ph, name, req) in enumerate(CASES, 1):
    if ph != phase and phase == "pre-init":
        call({"id": 0, "method": "initialize", "params": {"clientName": "record"}}); phase = "pre-initialized"
    if ph != phase and phase == "pre-initialized":
        call({"method": "initialized"}); phase = "ready"
    req = json.loads(sub(json.dumps(req)))
    res = call(dict(req, id=i)); res.pop("id")
    undo = lambda v: json.loads(json.dumps(v).replace(root, "$ROOT"))
    out["cases"].append({"name": name, "phase": ph, "request": undo(req), "expect": undo(res)})
p.stdin.close(); p.wait()
print(json.dumps(out, indent=1))
