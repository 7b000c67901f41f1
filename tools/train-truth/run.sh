#!/usr/bin/env bash
# Measure one training step of every shrunk causal-LM config with the oracle of ../shared/oracle/train/.
# Usage: tools/train-truth/run.sh CONFIG_DIR RAW_DIR [TYPES...]   (ORACLE_VENV: the oracle's venv)
# One subprocess per type and setting group, 600 s each; a type that fails leaves its error in RAW_DIR/err/.
# Settings (bf16): full fine-tuning at 40 tokens, batch 1, sdpa and eager, checkpointing off and on (with the
# parameter counts); at 24 tokens, batch 2, sdpa; LoRA r=16 on all-linear at 40 tokens, sdpa, checkpointing
# off and on. 40 and 24 are not powers of two, on purpose.
set -u
cfgs=$1; raw=$2; shift 2
py=${ORACLE_VENV:-/work/oracle-venv}/bin/python
oracle=$(cd "$(dirname "$0")/../../../shared/oracle/train" 2>/dev/null && pwd || echo /work/shared/oracle/train)
mkdir -p "$raw/err"
types=("$@")
[ ${#types[@]} -eq 0 ] && types=($(ls "$cfgs" | grep -v shrink.json | sed 's/\.json$//'))
for t in "${types[@]}"; do
  c="$cfgs/$t.json"
  grep -q "\"$t.json\"" "$raw/done" 2>/dev/null && continue
  timeout 600 "$py" "$oracle/train_oracle.py" "$c" --seq 40 --batch 1 --attn sdpa,eager --ckpt 0,1 --no-optim \
    >> "$raw/full.jsonl" 2> "$raw/err/$t.full"
  timeout 600 "$py" "$oracle/train_oracle.py" "$c" --seq 24 --batch 2 --attn sdpa --ckpt 0 --no-optim --no-params \
    >> "$raw/batch2.jsonl" 2> "$raw/err/$t.batch2"
  timeout 600 "$py" "$oracle/lora_oracle.py" "$c" --seq 40 --ckpt 0,1 --variants r16_all_linear --attn sdpa \
    >> "$raw/lora.jsonl" 2> "$raw/err/$t.lora"
  echo "\"$t.json\"" >> "$raw/done"
done
