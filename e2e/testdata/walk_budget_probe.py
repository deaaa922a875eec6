# Probes the bound the reference exec-server 0.169.0 puts on one fs/walk
# answer (TestFSWalkAnswerBudget, docs/protocol.md §6.11.2). Prints, per
# probe, the listed count, truncated, and the sums that show the rule:
# an entry costs len(uri) + 64, an errors item len(uri) + len(message) + 64,
# and the walk stops, truncated, before an item that would take the sum
# past 4 MiB (4194304; a sum of exactly 4194304 is allowed). Links that are
# not listed cost nothing. Run as root: python3 walk_budget_probe.py
# Recorded on 0.169.0:
#   A 32768 True 64                       (64-character URIs, 32769 files)
#   B errors 27060 True uri+msg+64 4194300 (nobody, a folder it cannot search)
#   C 2 False                             (40000 unlisted links, then a file)
#   D files 36157 True uri+64 4194212      (30-character names; the next entry would pass 4 MiB)
#   E fit 4096 False 960 True             (960-character URIs, four 200-character levels down: 4096 files)
#   E one-more 4096 True True             (4097 files: the last is left out)
#   F errors 4096 True 929 Permission denied (os error 13) True 0   (nobody, 929-character URIs, 4097 files)
import json, os, subprocess, tempfile
REF = "/tmp/codex-ref-0.169.0/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"

def server(nobody):
    home = tempfile.mkdtemp()
    os.chmod(home, 0o777)
    pre = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if nobody else []
    p = subprocess.Popen(pre + [REF, "exec-server", "--listen", "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, cwd="/", text=True, env=dict(os.environ, CODEX_HOME=home, HOME=home))
    def call(i, method, params=None):
        p.stdin.write(json.dumps({"id": i, "method": method, "params": params}) + "\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())
    call(0, "initialize", {"clientName": "probe"})
    p.stdin.write('{"method":"initialized"}\n')
    return lambda root: call(1, "fs/walk", {"path": "file://" + root, "options": {
        "maxDepth": 64, "maxDirectories": 10000, "maxEntries": 50000, "followDirectorySymlinks": False}})["result"]

walk = server(False)
root = tempfile.mkdtemp(prefix="a")
L = 64 - len("file://" + root) - 1
for i in range(32769):
    open(root + "/" + ("%06d" % i).ljust(L, "z"), "w").close()
r = walk(root)
print("A", len(r["entries"]), r["truncated"], len(r["entries"][0]["path"]))

root = tempfile.mkdtemp(prefix="c")
open(root + "/target", "w").close()
for i in range(40000):
    os.symlink("target", root + "/l%06d" % i + "x" * 60)
open(root + "/zzz", "w").close()
r = walk(root)
print("C", len(r["entries"]), r["truncated"])

root = tempfile.mkdtemp(prefix="d")
for i in range(45000):
    open(root + "/%06d" % i + "a" * 24, "w").close()
r = walk(root)
print("D files", len(r["entries"]), r["truncated"], "uri+64", sum(len(e["path"]) + 64 for e in r["entries"]))

base = tempfile.mkdtemp(prefix="b")
os.chmod(base, 0o755)
root = base + "/d"
os.makedirs(root)
for i in range(45000):
    open(root + "/%06d" % i + "q" * 30, "w").close()
os.chmod(root, 0o644)
r = server(True)(root)
print("B errors", len(r["errors"]), r["truncated"], "uri+msg+64",
      sum(len(e["path"]) + len(e["message"]) + 64 for e in r["errors"]))

base = tempfile.mkdtemp(prefix="e")
root = base + "/" + "/".join(["p" * 200] * 4)
os.makedirs(root)
L = 960 - len("file://" + root) - 1
name = lambda i: ("%06d" % i).ljust(L, "z")
for i in range(4096):
    open(root + "/" + name(i), "w").close()
r = walk(root)
print("E fit", len(r["entries"]), r["truncated"], len(r["entries"][0]["path"]), r["entries"][-1]["path"].endswith(name(4095)))
open(root + "/" + name(4096), "w").close()
r = walk(root)
print("E one-more", len(r["entries"]), r["truncated"], r["entries"][-1]["path"].endswith(name(4095)))

base = tempfile.mkdtemp(prefix="f")
os.chmod(base, 0o755)
root = base + "/" + "/".join(["q" * 200] * 4)
os.makedirs(root, 0o755)
L = 929 - len("file://" + root) - 1
name = lambda i: ("%06d" % i).ljust(L, "q")
for i in range(4097):
    open(root + "/" + name(i), "w").close()
os.chmod(root, 0o644)
r = server(True)(root)
print("F errors", len(r["errors"]), r["truncated"], len(r["errors"][0]["path"]), r["errors"][0]["message"],
      r["errors"][-1]["path"].endswith(name(4095)), len(r.get("entries", [])))
