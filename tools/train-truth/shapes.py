#!/usr/bin/env python3
"""Assemble the oracle's runs at shapes the derivation never saw into one truth file.

    python3 tools/train-truth/shapes.py tests/fixtures/train > tests/fixtures/train/shapes.json

Reads `DIR/raw/shapes/*.json`: `train_oracle.py` output (`<type>.eager.json`, FakeTensorMode, eager;
`<type>.sdpa.json`, `--real`, SDPA) and `lora_oracle.py` output (`<type>.lora.json`, one JSON line per
config, eager), all at 17 tokens × batch 3, checkpointing off and on, made with
`--seq 17 --batch 3 --ckpt 0,1 --no-optim --no-params` (LoRA: `--variants r16_all_linear,r8_qv_do05`).
The parameter counts come from `DIR/train.json`'s entry of the same type. Same format as `train.json`
(`check-truth.py train` and `train-lora` read it); each full run keeps its FLOPs under `flops`.
"""
import glob
import json
import os
import sys

KEEP = ("dtype", "attn", "ckpt", "batch", "seq", "retained_bytes", "forward_peak_bytes",
        "backward_peak_bytes", "gradient_bytes", "flops")


def main():
    base = sys.argv[1]
    known = {e["id"]: e for e in json.load(open(os.path.join(base, "train.json")))}
    entries = {}
    for path in sorted(glob.glob(os.path.join(base, "raw", "shapes", "*.json"))):
        name, kind, _ = os.path.basename(path).rsplit(".", 2)
        ref = known[name]
        e = entries.setdefault(name, {
            "id": name, "config": ref["config"], "model_type": ref["model_type"],
            "model_class": ref["model_class"], "has_experts": ref["has_experts"],
            "params": ref["params"], "gradient_bytes": ref["gradient_bytes"],
            "runs": [], "lora_runs": []})
        with open(path) as f:
            docs = [json.loads(line) for line in f if line.strip()]
        for d in docs:
            for r in d.get("runs", []):
                if r.get("retained_bytes") is not None:
                    e["runs"].append({k: r[k] for k in KEEP if k in r})
            for r in d.get("lora_runs", []):
                if r.get("retained_bytes") is not None:
                    e["lora_runs"].append({k: r[k] for k in KEEP + ("variant", "lora_config", "trainable")
                                           if k in r})
    json.dump(sorted(entries.values(), key=lambda e: e["id"]), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
