#!/usr/bin/env python3
# An independent recomputation of a Hearth draw (GET /v1/collections/{id}/draws/{drawId}), from
# the algorithm as the contract states it, in another language: reads the draw as JSON on stdin,
# checks its frame digest and seed commitment, and prints the households it draws by stratum.
import hashlib
import json
import sys

draw = json.load(sys.stdin)
frame = sorted(draw["frame"], key=lambda m: m["household"].encode("utf-8"))
# RFC 8785 for objects of ASCII strings: sorted keys, no whitespace.
canonical = json.dumps(frame, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
problems = []
if hashlib.sha256(canonical.encode("utf-8")).hexdigest() != draw["frameDigest"]:
    problems.append("frame digest")
seed = draw.get("seed")
if seed is not None and hashlib.sha256(bytes.fromhex(seed)).hexdigest() != draw["seedCommitment"]:
    problems.append("seed commitment")
sizes = {s.get("stratum", ""): s["sampleSize"] for s in draw["samples"]}
strata = {}
for m in frame:
    strata.setdefault(m.get("stratum", ""), []).append(m["household"])
drawn = {}
for stratum, households in strata.items():
    if draw["algorithm"] == "hearth-census/1":
        drawn[stratum] = households
    else:
        rank = lambda did: hashlib.sha256(f"{seed}:{stratum}:{did}".encode("utf-8")).digest()
        drawn[stratum] = sorted(households, key=rank)[: sizes[stratum]]
json.dump({"problems": problems, "drawn": drawn}, sys.stdout)
