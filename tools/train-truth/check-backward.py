#!/usr/bin/env python3
"""Compare `llmsize train --json`'s backward_peak_bytes with a training truth file's runs (full and LoRA) without
checkpointing.

    python3 tools/train-truth/check-backward.py TRUTH.json BIN [--all]

Prints each run the binary calls exact (backward_peak_estimate null) that differs, and the counts; `--all` also
lists estimates. Exit 1 when a run called exact differs.
"""
import json, os, subprocess, sys

truth, exe = sys.argv[1], sys.argv[2]
show_all = "--all" in sys.argv
base = os.path.dirname(os.path.abspath(truth))
exact = wrong = est = 0
def lora_flags(r):
    lc = r.get("lora_config")
    if not lc:
        return []
    t = lc["target_modules"]
    f = ["--lora-rank", str(lc["r"]), "--lora-targets", t if isinstance(t, str) else ",".join(t)]
    return f + (["--lora-dropout", str(lc["lora_dropout"])] if lc.get("lora_dropout") else [])


for e in json.load(open(truth)):
    for r in e.get("runs", []) + e.get("lora_runs", []):
        if r.get("ckpt") or r.get("backward_peak_bytes") is None:
            continue
        cmd = [exe, "train", os.path.join(base, e["config"]), "--seq-len", str(r["seq"]), "--batch", str(r["batch"]),
               "--dtype", r.get("dtype", "bf16"), "--attn-impl", r["attn"], "--device", "cpu", "--json", *lora_flags(r)]
        j = json.loads(subprocess.run(cmd, capture_output=True, text=True).stdout)
        got, want = j["backward_peak_bytes"], r["backward_peak_bytes"]
        tag = f"{e['id']} {r.get('dtype', 'bf16')} {r['attn']} b{r['batch']} s{r['seq']} {' '.join(lora_flags(r))}"
        if j.get("backward_peak_estimate") is None:
            if got == want:
                exact += 1
            else:
                wrong += 1
                print(f"WRONG {tag}: {got} != {want} ({got - want:+d})")
        else:
            est += 1
            if show_all:
                print(f"est   {tag}: {got} vs {want} ({(got - want) / want:+.1%})")
print(f"backward peak: {exact} exact, {wrong} called exact but wrong, {est} estimates")
sys.exit(1 if wrong else 0)
