#!/usr/bin/env python3
"""Hostile but valid inputs: each must be answered within 1 s and 256 MiB of peak RSS.

Usage: bench/hostile.py path/to/release/llmsize [--keep DIR] [--only NAME ...]

Builds each input in a temporary directory (or DIR with --keep), runs the `llmsize` binary on
it with stdout discarded, and prints the wall time, peak RSS (the child's `ru_maxrss` from
`os.wait4`) and exit code of every run. Each input is built by a separate Python process:
on Linux a child's `ru_maxrss` also counts what it shared with its parent before `exec`, so
a parent swollen by building an input would inflate every measurement. Exits 1 if any run takes more than 1 s or peaks above
256 MiB; an error exit of `llmsize` (2, a clear refusal) is fine, a crash (signal) is not.

Inputs:
  a  llama config.json (~150 bytes), num_hidden_layers = 1,000,000 -> params, memory, flops
  b  minimal GGUF (llama, llama.block_count = 1,000,000)         -> params, memory
  c  T5 config with num_layers = num_decoder_layers = 1,000,000  -> params, memory, flops
  d  qwen2_moe config with 100,000 `mlp_only_layers`             -> params, memory, flops
  e  SafeTensors, ~84 MB header, ~14M small arrays in an unknown field of a tensor entry
                                                                 -> inspect
  e2 as e, but the arrays are the value of an unknown top-level key -> inspect (an error)
  f  SafeTensors with 1,000,000 zero-size tensors                -> inspect (an error)
  f2 SafeTensors with 262,144 zero-size tensors (the most allowed) -> inspect, inspect --json
  g  SafeTensors, ~90 MB header, 7M tiny `__metadata__` entries  -> inspect (an error)
  h  gemma2 config, 1,000,000 layers alternating two kinds        -> params, --explain, memory, flops
  i  GGUF with 262,144 one-element tensors (the most allowed)     -> inspect, inspect --json
  j  SafeTensors with 65,536 `__metadata__` entries (the most allowed) -> inspect, --json
  k  SafeTensors, ~99 MB header, one 99 MB `__metadata__` string value -> inspect (an error)
  k2 SafeTensors whose `__metadata__` key and value are 16 MiB together (the most allowed)
                                                                 -> inspect, inspect --json

Then the cases of issue 21 ("every number bounded"), each with the exit status it must give
(2: a clear refusal naming the input; 0/1: an answer), run the same way (`--only w5` etc.):
  w1 `--gpu h100x18446744073709551615` to memory, flops and train    -> 2
  w2 `--gpu h100x1000000` (more GPUs than the model has heads × layers) -> 2
  w3 inkling_mm_model, `vision_config.n_layers` = 4,294,967,295     -> 2
  w4 zaya `cca_time0`, longcat_flash `qk_rope_head_dim` = 2^64 − 1  -> 2
  w5 a MODEL of 100,000 characters                                   -> 2
  w6 `--sweep` of 15,000 points                                      -> 2
  w7 inkling_text and inkling2 with 1,000,000 layers: params         -> 0
  w7t the same, train: an answer or the refusal of more runs than a step walks -> 0 or 2
  w8 cohere2, cwm, granite with 1,000,000 layers (sliding patterns): train, LoRA -> 0 or 2
  w8f the same, flops on a GPU                                       -> 0
  w9 `train --price 1e308 --tokens 1T` (a cost past any number)      -> 2
  w10 a config starting with a UTF-8 BOM; `hidden_size` = NaN        -> 2
  w11 a FIFO and /dev/zero named as the model                         -> 2

Python 3 standard library only.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time

MAX_SECONDS = 1.0
MAX_RSS_BYTES = 256 * 1024 * 1024


def write(path, data):
    mode = "wb" if isinstance(data, (bytes, bytearray)) else "w"
    with open(path, mode) as f:
        f.write(data)
    return path


def llama_config(d):
    config = {
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_hidden_layers": 1_000_000,
        "num_key_value_heads": 4,
        "vocab_size": 32,
    }
    return write(os.path.join(d, "config.json"), json.dumps(config, separators=(",", ":")))


def t5_config(d):
    config = {
        "model_type": "t5",
        "d_model": 64,
        "d_kv": 16,
        "d_ff": 128,
        "num_heads": 4,
        "num_layers": 1_000_000,
        "num_decoder_layers": 1_000_000,
        "relative_attention_num_buckets": 32,
        "vocab_size": 32,
    }
    return write(os.path.join(d, "config.json"), json.dumps(config))


def qwen2_moe_config(d):
    config = {
        "model_type": "qwen2_moe",
        "hidden_size": 64,
        "intermediate_size": 128,
        "moe_intermediate_size": 32,
        "shared_expert_intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "num_hidden_layers": 100_000,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "decoder_sparse_step": 1,
        "mlp_only_layers": list(range(100_000)),
        "vocab_size": 32,
    }
    return write(os.path.join(d, "config.json"), json.dumps(config))


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_file(d):
    # GGUF v3: magic, version, tensor count, kv count, then key, value type, value.
    u32, string = 4, 8
    kvs = [
        ("general.architecture", string, "llama"),
        ("llama.block_count", u32, 1_000_000),
        ("llama.context_length", u32, 128),
        ("llama.embedding_length", u32, 64),
        ("llama.feed_forward_length", u32, 128),
        ("llama.attention.head_count", u32, 4),
        ("llama.attention.head_count_kv", u32, 4),
        ("llama.vocab_size", u32, 32),
    ]
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)))
    for key, kind, value in kvs:
        out += gguf_string(key) + struct.pack("<I", kind)
        out += gguf_string(value) if kind == string else struct.pack("<I", value)
    out += b"\0" * (-len(out) % 32)
    return write(os.path.join(d, "deep.gguf"), bytes(out))


def safetensors_file(path, header, data_len):
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        f.write(b"\0" * data_len)
    return path


# ~14M arrays of 6 bytes each (`[0,0],`): an 84 MB header, under the 100 MB limit.
JUNK_ARRAYS = 14_000_000


def junk():
    return b"[" + b"[0,0]," * (JUNK_ARRAYS - 1) + b"[0,0]]"


def safetensors_junk_in_entry(d):
    header = (
        b'{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],'
        b'"data_offsets":[0,8],"junk":' + junk() + b"}}"
    )
    return safetensors_file(os.path.join(d, "junk-in-entry.safetensors"), header, 8)


def safetensors_junk_top_level(d):
    header = (
        b'{"__metadata__":{"format":"pt"},"junk":' + junk() + b","
        b'"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
    )
    return safetensors_file(os.path.join(d, "junk-top-level.safetensors"), header, 8)


def safetensors_many_tensors(d):
    entry = '"t%d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}'
    header = ("{" + ",".join(entry % i for i in range(1_000_000)) + "}").encode()
    return safetensors_file(os.path.join(d, "many-tensors.safetensors"), header, 0)


def safetensors_most_tensors(d):
    # The most tensors a file may hold (MAX_TENSORS = 2**18), all zero-size.
    entry = '"t%d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}'
    header = ("{" + ",".join(entry % i for i in range(1 << 18)) + "}").encode()
    return safetensors_file(os.path.join(d, "most-tensors.safetensors"), header, 0)


def gemma2_alternating(d):
    # Gemma 2 slides on every other layer: a million runs of two layer kinds.
    return write(os.path.join(d, "config.json"), json.dumps({
        "model_type": "gemma2", "hidden_size": 2304, "num_hidden_layers": 1_000_000,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
        "intermediate_size": 9216, "vocab_size": 256000, "sliding_window": 4096}))


def gguf_many_tensors(d):
    # A GGUF of 262,144 one-element F32 tensors (the most allowed), data sparse.
    n = 1 << 18
    out = bytearray(b"GGUF") + struct.pack("<IQQ", 3, n, 1)
    out += gguf_string("general.architecture") + struct.pack("<I", 8) + gguf_string("llama")
    for i in range(n):
        out += gguf_string("t%d" % i) + struct.pack("<IQIQ", 1, 1, 0, 32 * i)
    while len(out) % 32:
        out.append(0)
    path = os.path.join(d, "many-tensors.gguf")
    with open(path, "wb") as f:
        f.write(out)
        f.truncate(len(out) + 32 * n)
    return path


def safetensors_most_metadata(d):
    # The most `__metadata__` entries allowed (65,536), with one real tensor.
    meta = ",".join('"k%d":"v"' % i for i in range(65_536))
    header = ('{"__metadata__":{' + meta + '},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}').encode()
    return safetensors_file(os.path.join(d, "most-metadata.safetensors"), header, 4)


def safetensors_long_metadata_value(d, n, name):
    header = (
        b'{"__metadata__":{"note":"' + b"x" * n + b'"},'
        b'"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    )
    return safetensors_file(os.path.join(d, name), header, 4)


def safetensors_huge_metadata_value(d):
    # 99,000,000 bytes in one string: under the 100 MB header limit.
    return safetensors_long_metadata_value(d, 99_000_000, "huge-metadata-value.safetensors")


def safetensors_most_metadata_value(d):
    # The most metadata text allowed (MAX_METADATA_BYTES = 16 MiB): 4 bytes of key `note`.
    return safetensors_long_metadata_value(d, (16 << 20) - 4, "most-metadata-value.safetensors")


def safetensors_many_metadata(d):
    header = ('{"__metadata__":{' + ",".join('"%d":""' % i for i in range(7_000_000)) + "}}").encode()
    return safetensors_file(os.path.join(d, "many-metadata.safetensors"), header, 0)


CASES = [
    ("a", llama_config, ["params", "memory", "flops"]),
    ("b", gguf_file, ["params", "memory"]),
    ("c", t5_config, ["params", "memory", "flops"]),
    ("d", qwen2_moe_config, ["params", "memory", "flops"]),
    ("e", safetensors_junk_in_entry, ["inspect"]),
    ("e2", safetensors_junk_top_level, ["inspect"]),
    ("f", safetensors_many_tensors, ["inspect"]),
    ("f2", safetensors_most_tensors, ["inspect", "inspect --json"]),
    ("g", safetensors_many_metadata, ["inspect"]),
    ("j", safetensors_most_metadata, ["inspect", "inspect --json"]),
    ("k", safetensors_huge_metadata_value, ["inspect"]),
    ("k2", safetensors_most_metadata_value, ["inspect", "inspect --json"]),
    ("i", gguf_many_tensors, ["inspect", "inspect --json"]),
    ("h", gemma2_alternating, ["params", "params --explain", "memory --dtype q4_k_m",
                              "memory --gpu h100x8 --max-context", "flops"]),
]


ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
U64_MAX = 2**64 - 1


def coverage(model_type):
    path = os.path.join(ROOT, "tests/fixtures/coverage/configs", model_type + ".default.json")
    with open(path) as f:
        return json.load(f)


def config_with(d, name, model_type, edit):
    config = coverage(model_type)
    edit(config)
    return write(os.path.join(d, name), json.dumps(config))


def million_layers(config):
    """A million layers; per-layer lists (`layer_types`, `mlp_layer_types`) are dropped so that
    the reader derives them from its class's rule, as transformers does."""
    text = config.get("text_config", config)
    for key in ("num_hidden_layers", "n_layers", "num_layers"):
        if key in text:
            text[key] = 1_000_000
    for key in [k for k in text if k.endswith("layer_types")]:
        del text[key]


def why_configs(d):
    """Every file the w-cases name, in one folder."""
    def vision_layers(c):
        c["vision_config"]["n_layers"] = 2**32 - 1

    config_with(d, "inkling_mm.json", "inkling_mm_model", vision_layers)
    config_with(d, "zaya.json", "zaya", lambda c: c.update(cca_time0=U64_MAX))
    config_with(d, "longcat.json", "longcat_flash", lambda c: c.update(qk_rope_head_dim=U64_MAX))
    for t in ("inkling_text", "inkling2", "cohere2", "cwm", "granite"):
        config_with(d, t + ".json", t, million_layers)
    with open(os.path.join(d, "llama.json"), "w") as f:
        f.write("\ufeff" + llama_text())
    write(os.path.join(d, "nan.json"), llama_text().replace('"hidden_size":64', '"hidden_size":NaN'))
    os.mkfifo(os.path.join(d, "fifo"))
    return d


def llama_text():
    return json.dumps({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
                       "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 32},
                      separators=(",", ":"))


GPU_MAX = "h100x18446744073709551615"
SWEEP = "seq=" + ",".join(str(i + 1) for i in range(15_000))

# name, [argv with {d} for the folder of why_configs], the exit status each must give.
WHY = [
    ("w1", [["memory", "llama-2-7b", "--gpu", GPU_MAX], ["flops", "llama-2-7b", "--gpu", GPU_MAX],
            ["train", "llama-2-7b", "--gpu", GPU_MAX]], 2),
    ("w2", [["memory", "llama-2-7b", "--gpu", "h100x1000000"]], 2),
    ("w3", [["params", "{d}/inkling_mm.json"], ["memory", "{d}/inkling_mm.json"]], 2),
    ("w4", [["params", "{d}/zaya.json"], ["params", "{d}/longcat.json"]], 2),
    ("w5", [["params", "x" * 100_000], ["memory", "a/" * 50_000]], 2),
    ("w6", [["memory", "llama-2-7b", "--sweep", SWEEP]], 2),
    ("w7", [["params", "{d}/%s.json" % t] for t in ("inkling_text", "inkling2")], 0),
    # A training step answers, or refuses a stack of more runs than it walks (MAX_RUNS).
    ("w7t", [["train", "{d}/%s.json" % t] for t in ("inkling_text", "inkling2")], (0, 2)),
    ("w8", [[*c, "{d}/%s.json" % t] for t in ("cohere2", "cwm", "granite")
            for c in (["train"], ["train", "--lora-rank", "8"])], (0, 2)),
    ("w8f", [["flops", "{d}/%s.json" % t, "--gpu", "h100"] for t in ("cohere2", "cwm", "granite")], 0),
    ("w9", [["train", "llama-2-7b", "--gpu", "h100", "--price", "1e308", "--tokens", "1T"]], 2),
    ("w10", [["params", "{d}/llama.json"], ["params", "{d}/nan.json"]], 2),
    ("w11", [["params", "{d}/fifo"], ["params", "/dev/zero"]], 2),
]


def run(binary, args):
    start = time.monotonic()
    child = subprocess.Popen(
        [binary, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    # A run that never ends is killed after 10 s (and fails: a signal is a crash here).
    timer = threading.Timer(10, child.kill)
    timer.start()
    # wait4 gives this child's own rusage, so earlier runs do not mask its peak.
    _, status, usage = os.wait4(child.pid, 0)
    timer.cancel()
    seconds = time.monotonic() - start
    stderr = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    rss = usage.ru_maxrss * 1024  # kilobytes on Linux
    return seconds, rss, os.waitstatus_to_exitcode(status), stderr


def build_in_child(name, d):
    """Build input `name` in `d` with a fresh interpreter; returns its path."""
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--build", name, d],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def main(argv):
    if len(argv) == 4 and argv[1] == "--build":
        build = {name: build for name, build, _ in CASES + [("why", why_configs, [])]}[argv[2]]
        print(build(argv[3]))
        return 0
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(argv[1])
    keep, only = None, set()
    rest = argv[2:]
    while rest:
        flag = rest.pop(0)
        if flag == "--keep" and rest:
            keep = rest.pop(0)
        elif flag == "--only" and rest:
            only.add(rest.pop(0))
        else:
            print(f"unknown argument `{flag}`", file=sys.stderr)
            return 2
    failed = []
    with tempfile.TemporaryDirectory(prefix="llmsize-hostile-") as tmp:
        for name, build, commands in CASES:
            if only and name not in only:
                continue
            d = os.path.join(keep or tmp, name)
            os.makedirs(d, exist_ok=True)
            path = build_in_child(name, d)
            size = os.path.getsize(path)
            for command in commands:
                words = command.split()
                seconds, rss, code, stderr = run(binary, [words[0], path] + words[1:])
                over = seconds > MAX_SECONDS or rss > MAX_RSS_BYTES or code < 0
                verdict = "FAIL" if over else "ok"
                print(
                    f"{verdict:4} {name:2} {command:22} {seconds:7.3f} s {rss / 2**20:8.1f} MiB"
                    f"  exit {code:3}  input {size:,} bytes",
                    flush=True,
                )
                if code not in (0, 1):
                    first = stderr.strip().splitlines()[:1]
                    if first:
                        print(f"          {first[0][:160]}")
                if over:
                    failed.append(f"{name} {command}")
        d = os.path.join(keep or tmp, "why")
        os.makedirs(d, exist_ok=True)
        if any(not only or name in only for name, _, _ in WHY):
            build_in_child("why", d)
        for name, commands, expected in WHY:
            if only and name not in only:
                continue
            for argv in commands:
                argv = [a.replace("{d}", d) for a in argv]
                seconds, rss, code, stderr = run(binary, argv)
                over = seconds > MAX_SECONDS or rss > MAX_RSS_BYTES or code < 0
                allowed = expected if isinstance(expected, tuple) else (expected,)
                # An answer is 0 or a well-formed "no" (1).
                wrong = code not in allowed and not (0 in allowed and code == 1)
                shown = " ".join(a if len(a) < 40 else a[:20] + f"…({len(a):,} chars)" for a in argv)
                print(
                    f"{'FAIL' if over or wrong else 'ok':4} {name:3} {seconds:7.3f} s {rss / 2**20:8.1f} MiB"
                    f"  exit {code:3} (want {expected})  {shown[:90]}",
                    flush=True,
                )
                if code not in (0, 1):
                    first = stderr.strip().splitlines()[:1]
                    if first:
                        print(f"          {first[0][:160]}")
                if over or wrong:
                    failed.append(f"{name} {shown[:60]}")
    if failed:
        print(f"over {MAX_SECONDS} s or {MAX_RSS_BYTES // 2**20} MiB, or the wrong exit status: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
