#!/usr/bin/env python3
"""Shrink each causal-LM type's class-default config to the fewest layers that keep every layer kind.

A training step's cost under the oracle grows with the number of layers, not their width, so the
training truth of every type is measured on its class-default config (`../shared/truth/coverage/
configs/<type>.default.json`, the widths of a released model) cut to the shortest prefix of layers
whose layer kinds (as llmsize's layout reads them: `examples/layer_kinds.rs`) are all the kinds of
the full model. Cutting sets the layer-count fields and truncates every per-layer list or pattern
string (`layer_types`, `hybrid_override_pattern`, ...) the config holds.

Usage: shrink.py COVERAGE_DIR OUT_DIR [--max 16]   (run from the repository root; needs
`cargo build --release -p llmsize-adapters --example layer_kinds`). Writes OUT_DIR/<type>.json and
OUT_DIR/shrink.json (type -> layers kept, of how many, which fields were cut).
"""
import argparse, json, os, subprocess, sys, tempfile

KINDS = "target/release/examples/layer_kinds"


def cut(value, full, n, path, changed):
    """A copy of a config value with every layer-count field and per-layer list cut to n."""
    if isinstance(value, dict):
        return {k: cut(v, full, n, f"{path}.{k}" if path else k, changed) for k, v in value.items()}
    if isinstance(value, list) and len(value) == full and full > 1:
        changed.add(path)
        return value[:n]
    if isinstance(value, str) and len(value) == full and full > 2 and len(set(value)) <= 4 and "/" not in value:
        changed.add(path)
        return value[:n]
    if isinstance(value, int) and not isinstance(value, bool) and value == full and "layer" in path.split(".")[-1]:
        changed.add(path)
        return n
    return value


def kinds_of(files):
    out = subprocess.run([KINDS, *files], capture_output=True, text=True, check=True).stdout
    return {j["file"]: j for j in map(json.loads, out.splitlines())}


def sequence(j):
    """Per stack, the kind hash of every layer in order."""
    seqs = []
    for s in j["stacks"]:
        seqs.append([s["kinds"][k] for k, _, c in s["runs"] for _ in range(c)])
    return seqs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("coverage")
    ap.add_argument("out")
    ap.add_argument("--max", type=int, default=16)
    a = ap.parse_args()
    entries = [e for e in json.load(open(os.path.join(a.coverage, "coverage.json"))) if e["mapping"] == "causal_lm"]
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp()
    full_files = {e["model_type"]: os.path.join(a.coverage, e["config"]) for e in entries}
    full = kinds_of(list(full_files.values()))
    plans, cand = {}, []
    for t, f in sorted(full_files.items()):
        j = full[f]
        if "error" in j or len(j["stacks"]) != 1:
            plans[t] = {"skipped": j.get("error", "not one decoder stack")}
            continue
        seq = sequence(j)[0]
        raw = json.load(open(f))
        plans[t] = {"full_layers": len(seq), "seq": seq, "raw": raw, "tries": []}
        for n in range(1 if len(seq) == 1 else 2, min(len(seq), a.max) + 1):
            changed = set()
            cfg = cut(raw, len(seq), n, "", changed)
            p = os.path.join(tmp, f"{t}.{n}.json")
            json.dump(cfg, open(p, "w"))
            plans[t]["tries"].append((n, p, cfg, sorted(changed)))
            cand.append(p)
    got = kinds_of(cand)
    summary = {}
    for t, pl in plans.items():
        if "skipped" in pl:
            summary[t] = pl
            continue
        want = set(pl["seq"])
        pick = None
        for n, p, cfg, changed in pl["tries"]:
            j = got[p]
            if "error" in j:
                continue
            s = sequence(j)[0]
            if len(s) == n and set(s) == want and s == pl["seq"][:n]:
                pick = (n, cfg, changed)
                break
        if pick is None:
            summary[t] = {"skipped": f"no prefix of <= {a.max} layers keeps every layer kind", "full_layers": pl["full_layers"]}
            continue
        n, cfg, changed = pick
        json.dump(cfg, open(os.path.join(a.out, f"{t}.json"), "w"), indent=1, sort_keys=True)
        summary[t] = {"layers": n, "full_layers": pl["full_layers"], "kinds": len(want), "cut": changed}
    json.dump(summary, open(os.path.join(a.out, "shrink.json"), "w"), indent=1, sort_keys=True)
    ok = sum(1 for v in summary.values() if "layers" in v)
    print(f"{ok} of {len(summary)} types shrunk; skipped: " +
          ", ".join(f"{t} ({v['skipped']})" for t, v in summary.items() if "skipped" in v), file=sys.stderr)


if __name__ == "__main__":
    main()
