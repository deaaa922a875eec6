# Records command/exec probes of the reference app-server as replay data:
# one JSON line per request, with the messages it produced (ids and
# emittedAtMs stripped), ending with its response.
import json, subprocess, os, tempfile, sys
home = tempfile.mkdtemp()
p = subprocess.Popen(["/tmp/codex-ref-0.169.0/node_modules/.bin/codex","app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(os.environ, CODEX_HOME=home), cwd="/tmp")
def send(o): p.stdin.write((json.dumps(o)+"\n").encode()); p.stdin.flush()
def recv(i):
    out=[]
    while True:
        m=json.loads(p.stdout.readline())
        if m.get("method") in ("configWarning","remoteControl/status/changed"): continue
        m.pop("emittedAtMs",None)
        if m.get("id")==i: m.pop("id"); out.append(m); return out
        out.append(m)
send({"method":"initialize","id":0,"params":{"clientInfo":{"name":"x","version":"1"},"capabilities":{"experimentalApi":True}}}); recv(0)
send({"method":"initialized"})
U={"type":"dangerFullAccess"}
for i,line in enumerate(open(sys.argv[1]),1):
    name,req=line.split(" ",1); req=json.loads(req)
    for k,v in list(req.get("params",{}).items() if isinstance(req.get("params"),dict) else []):
        if v=="$U": req["params"][k]=U
    send(dict(req,id=i))
    print(json.dumps({"name":name,"request":req,"expect":recv(i)}))
p.kill()
