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

`RAW/real.jsonl` (and `RAW/real_lora.jsonl`, LoRA runs) holds runs made with `--real` (real CPU tensors) where FakeTensorMode changes what the
model runs: each replaces the FakeTensorMode run of the same type and setting (dtype, attention,
checkpointing, batch, sequence), or is added where there is none, and is marked `"real": true`. (transformers 5.24's
`_ignore_causal_mask_sdpa` never skips the causal mask of a fake attention mask, `is_tracing` being true
for a FakeTensor: a decoder that builds an all-ones mask, BART's family, then hands SDPA an explicit mask
that a real run leaves out.)
"""
import json
import os
import sys

KEEP = ("dtype", "attn", "ckpt", "batch", "seq", "saved_activation_bytes", "retained_bytes",
        "forward_peak_bytes", "backward_peak_bytes", "gradient_bytes", "flops", "real")
KEEP_LORA = KEEP + ("variant", "lora_config", "trainable", "trainable_tensors", "frozen",
                    "target_modules_resolved")


def lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def setting(r):
    return (r["dtype"], r["attn"], r["ckpt"], r["batch"], r["seq"])


def measured(runs):
    return [r for r in runs or [] if r.get("retained_bytes") is not None]


def main():
    base = sys.argv[1]
    raw = os.path.join(base, "raw")
    entries = {}
    real = {}
    for d in lines(os.path.join(raw, "real.jsonl")):
        for r in measured(d.get("runs")):
            real[(d["config"], setting(r))] = dict(r, real=True)
    for d in lines(os.path.join(raw, "full.jsonl")) + lines(os.path.join(raw, "batch2.jsonl")):
        runs = [real.get((d["config"], setting(r)), r) for r in measured(d.get("runs"))]
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
    # Real runs of settings the FakeTensorMode runs lack are added as they are.
    for d in lines(os.path.join(raw, "real.jsonl")):
        e = entries.get(d["config"].removesuffix(".json"))
        if e is None:
            continue
        for r in measured(d.get("runs")):
            if not any(setting(x) == setting(r) for x in e["runs"]):
                e["runs"].append({k: v for k, v in dict(r, real=True).items() if k in KEEP})
    real_lora = {}
    for d in lines(os.path.join(raw, "real_lora.jsonl")):
        for r in measured(d.get("lora_runs")):
            real_lora[(d["config"], r.get("variant"), setting(r))] = dict(r, real=True)
    for d in lines(os.path.join(raw, "lora.jsonl")):
        name = d["config"].removesuffix(".json")
        if name in entries:
            for r in measured(d.get("lora_runs")):
                r = real_lora.get((d["config"], r.get("variant"), setting(r)), r)
                e = {k: r[k] for k in KEEP_LORA if k in r}
                e["flops_include_experts"] = True
                entries[name]["lora_runs"].append(e)
    out = [e for e in sorted(entries.values(), key=lambda e: e["id"]) if "params" in e]
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
