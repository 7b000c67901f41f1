#!/usr/bin/env python3
"""Benchmark: read the headers of a 100-shard checkpoint.

Makes a header-only (sparse, zero-filled, valid) SafeTensors checkpoint of 100 shards with 30
BF16 tensors each, then times, with hyperfine:
  - `llmsize inspect DIR --json` (reads 8 + N bytes per shard), and
  - Python `safetensors.safe_open` on every shard, reading every tensor's shape
    (`get_slice(k).get_shape()`), the usual way to count a checkpoint without loading it.
Usage: python3 bench/shards.py [LLMSIZE] [PYTHON]   (PYTHON needs `safetensors`)
"""
import json, os, struct, subprocess, sys, tempfile

llmsize = sys.argv[1] if len(sys.argv) > 1 else "target/release/llmsize"
python = sys.argv[2] if len(sys.argv) > 2 else sys.executable
root = tempfile.mkdtemp(prefix="llmsize-shards-")
weight_map = {}
for s in range(100):
    name = f"model-{s + 1:05}-of-00100.safetensors"
    header, off = {"__metadata__": {"format": "pt"}}, 0
    names = [f"self_attn.{p}_proj" for p in "qkvo"] + [f"mlp.shared_experts.{p}_proj" for p in ("gate", "up", "down")]
    names += [f"mlp.experts.{e}.{p}_proj" for e in range(7) for p in ("gate", "up", "down")]
    names += ["input_layernorm", "post_attention_layernorm"]
    for t in names:  # 30 tensors of one layer, as a MoE checkpoint names them
        key = f"model.layers.{s}.{t}.weight"
        shape = [4096] if t.endswith("layernorm") else [4096, 1024]
        n = 2 * (shape[0] * (shape[1] if len(shape) > 1 else 1))
        header[key] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + n]}
        off += n
        weight_map[key] = name
    text = json.dumps(header).encode()
    with open(os.path.join(root, name), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(8 + len(text) + off)
with open(os.path.join(root, "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {}, "weight_map": weight_map}, f)
py = (
    "import glob,sys\n"
    "from safetensors import safe_open\n"
    "n=0\n"
    f"for p in sorted(glob.glob('{root}/*.safetensors')):\n"
    "    with safe_open(p,'pt') as f:\n"
    "        for k in f.keys():\n"
    "            s=f.get_slice(k).get_shape(); n+=s[0]*(s[1] if len(s)>1 else 1)\n"
    "print(n)\n"
)
script = os.path.join(root, "count.py")
open(script, "w").write(py)
# The same loop with the numpy framework, which spares Python the `import torch`.
script_np = os.path.join(root, "count_np.py")
open(script_np, "w").write(py.replace("'pt'", "'np'"))
subprocess.run(["hyperfine", "-N", "--warmup", "3", "--export-json", os.path.join(root, "result.json"),
                f"{llmsize} inspect {root} --json", f"{python} {script}", f"{python} {script_np}"], check=True)
res = json.load(open(os.path.join(root, "result.json")))["results"]
print(f"llmsize {res[0]['mean']*1e3:.1f} ms; python safe_open pt {res[1]['mean']*1e3:.1f} ms "
      f"({res[1]['mean'] / res[0]['mean']:.1f}x); np {res[2]['mean']*1e3:.1f} ms ({res[2]['mean'] / res[0]['mean']:.1f}x)")
