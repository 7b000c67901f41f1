#!/usr/bin/env python3
"""Measure dropout in the RMSNorm walker's layers with the oracles, into one truth file.

    ORACLE_VENV=/work/oracle-venv python3 tools/train-truth/dropout.py tests/fixtures/train \
        > tests/fixtures/train/dropout.json

Runs `../shared/oracle/train/train_oracle.py` (FakeTensorMode, CPU, torch 2.15.0, transformers 5.24.0)
and `lora_oracle.py` (peft 0.21.2) on `DIR/configs/dropout/*.json`: Seed-OSS scaled to hidden 64,
4 heads of 16, 2 layers, vocabulary 256 (so the attention, not the loss, makes the forward peak), with its
class defaults `attention_dropout` 0.1 and `residual_dropout` 0.1, at 2 (GQA), 4 (MHA) and 1 (MQA) KV
heads, and without dropout (`seed_oss_nodrop`, the same layers' eager peaks at batch 2). Every config:
bf16 and fp32, eager and SDPA (which attention dropout sends to the CPU math path), checkpointing off
and on, batch 1 and 2, 256 tokens; LoRA (r16 all-linear, r8 q/v with dropout 0.05) at batch 2, bf16,
both attentions, checkpointing off and on. Same format as `train.json` (`check-truth.py train`,
`train-lora`, and `crates/llmsize-cli/tests/train_truth.rs` read it).
"""
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.join(HERE, "..", "..", "..", "shared", "oracle", "train")
PY = os.path.join(os.environ.get("ORACLE_VENV", "/work/oracle-venv"), "bin", "python")
KEEP = ("dtype", "attn", "ckpt", "batch", "seq", "retained_bytes", "forward_peak_bytes",
        "backward_peak_bytes", "gradient_bytes")
SEQ = 256


def oracle(script, args):
    out = subprocess.run([PY, os.path.join(ORACLE, script), *args], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def entry(base, path):
    name = os.path.splitext(os.path.basename(path))[0]
    e = {"id": f"dropout/{name}", "config": os.path.relpath(path, base),
         "model_type": "seed_oss", "model_class": "SeedOssForCausalLM", "has_experts": False,
         "runs": [], "lora_runs": []}
    for dtype in ("bf16", "fp32"):
        for attn in ("eager", "sdpa"):
            for batch in (1, 2):
                d = oracle("train_oracle.py", [path, "--seq", str(SEQ), "--batch", str(batch),
                                               "--dtype", dtype, "--attn", attn, "--ckpt", "0,1",
                                               "--no-params", "--no-optim"])
                e["runs"] += [{k: r[k] for k in KEEP if k in r} for r in d["runs"]]
    if not name.endswith("nodrop"):
        for attn in ("eager", "sdpa"):
            d = oracle("lora_oracle.py", [path, "--seq", str(SEQ), "--batch", "2", "--attn", attn,
                                          "--ckpt", "0,1", "--variants",
                                          "r16_all_linear,r8_qv_do05"])
            for r in d["lora_runs"]:
                r.pop("saved_by_module", None)
                r.pop("retained_by_module", None)
                r.pop("loss_path", None)
                r["flops"] = {}  # the step's FLOPs are checked elsewhere
                e["lora_runs"].append(r)
    return e


def main():
    base = sys.argv[1]
    paths = sorted(glob.glob(os.path.join(base, "configs", "dropout", "*.json")))
    json.dump([entry(base, p) for p in paths], sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
