# derive_meta.py SCHEMA.json [VERSION]: the meta.json (protocol VERSION, 1 unless given) acp-go-sdk's generator reads, from the schema's x-method/x-side.
import json, re, sys
S = json.load(open(sys.argv[1]))["$defs"]
m = {"version": int(sys.argv[2]) if len(sys.argv) > 2 else 1, "agentMethods": {}, "clientMethods": {}, "protocolMethods": {}}
side = {"agent": ["agentMethods"], "client": ["clientMethods"], "protocol": ["protocolMethods"], "both": ["agentMethods", "clientMethods"]}
key = lambda w: re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", w.removeprefix("$/")).lower().replace("/", "_")
for d in S.values():
    for t in side.get(d.get("x-side"), []):  # "proxy" has no slot: dropped
        if d.get("x-method"):
            m[t][key(d["x-method"])] = d["x-method"]
print(json.dumps(m, indent=2, sort_keys=True))
