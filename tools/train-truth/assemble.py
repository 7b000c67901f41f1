#!/usr/bin/env python3
"""Merge the oracle's raw training output into one truth file in `../shared/truth/train/train.json`'s format.

    python3 tools/train-truth/assemble.py tests/fixtures/train > tests/fixtures/train/train.json

Reads `RAW/full.jsonl`, `RAW/batch2.jsonl` and `RAW/lora.jsonl` (made by `run.sh`) under `DIR/raw/`; one entry
per model type with at least one measured run, with the fields `../shared/tools/check-truth.py train` and
`train-lora` read: `params.full.trainable`, `gradient_bytes.bf16`, `runs`, `lora_runs`, and
`train_step_flops` (the sdpa runs' FLOPs at 40 tokens; `train_oracle.py` counts the experts' grouped
matmuls, so MoE figures are marked `experts_counted`). The runs were made with `--no-optim`, so there is no
optimizer figure. A run's `backward_peak_bytes` is kept as measured. Configs are referred to as
`configs/<type>.json`, relative to DIR.
"""
import json
import os
import sys

KEEP = ("dtype", "attn", "ckpt", "batch", "seq", "saved_activation_bytes", "retained_bytes",
        "forward_peak_bytes", "backward_peak_bytes", "gradient_bytes", "flops")
KEEP_LORA = KEEP + ("variant", "lora_config", "trainable", "trainable_tensors", "frozen",
                    "target_modules_resolved")


def lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def measured(runs):
    return [r for r in runs or [] if r.get("retained_bytes") is not None]


def main():
    base = sys.argv[1]
    raw = os.path.join(base, "raw")
    entries = {}
    for d in lines(os.path.join(raw, "full.jsonl")) + lines(os.path.join(raw, "batch2.jsonl")):
        runs = measured(d.get("runs"))
        if not runs:
            continue
        name = d["config"].removesuffix(".json")
        e = entries.setdefault(name, {
            "id": name, "config": f"configs/{d['config']}", "model_type": d.get("model_type"),
            "model_class": d.get("model_class"), "has_experts": bool(d.get("has_experts")),
            "runs": [], "lora_runs": [],
        })
        if "params" in d and "params" not in e:
            e["params"] = {"full": d["params"]["full"]}
        for r in runs:
            e["runs"].append({k: r[k] for k in KEEP if k in r})
            e.setdefault("gradient_bytes", {})[r["dtype"]] = r["gradient_bytes"]
            if r["attn"] == "sdpa" and r["batch"] == 1 and r.get("flops"):
                f = e.setdefault("train_step_flops", {}).setdefault(str(r["seq"]), {
                    "attn": "sdpa", "experts_counted": True})
                f["forward"] = r["flops"]["forward"]
                f["train_step_ckpt" if r["ckpt"] else "train_step"] = r["flops"]["train_step"]
    for d in lines(os.path.join(raw, "lora.jsonl")):
        name = d["config"].removesuffix(".json")
        if name in entries:
            for r in measured(d.get("lora_runs")):
                e = {k: r[k] for k in KEEP_LORA if k in r}
                e["flops_include_experts"] = True
                entries[name]["lora_runs"].append(e)
    out = [e for e in sorted(entries.values(), key=lambda e: e["id"]) if "params" in e]
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
