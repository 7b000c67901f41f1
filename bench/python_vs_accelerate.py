#!/usr/bin/env python3
"""llmsize.params against accelerate's estimate, in one Python process, on Llama-2-7B.

Usage: python bench/python_vs_accelerate.py   (in a venv with llmsize, accelerate,
transformers and torch installed; no network: the config is the repository's copy).

accelerate's `estimate-memory` builds the model on the meta device from its config
(`init_empty_weights` + `AutoModelForCausalLM.from_config`) and sums the tensors
(`calculate_maximum_sizes`); its command fetches the config from the Hub first, which this
script replaces by the local config. Printed: import time, first-call latency and calls per
second for each, and the counts both give.
"""

import json
import sys
import time
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[1] / "tests/fixtures/truth/configs/Llama-2-7b-hf.json"


def rate(fn, seconds=3.0):
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    return n / (time.perf_counter() - start)


def main():
    config = json.loads(CONFIG.read_text())

    t = time.perf_counter()
    import llmsize

    llmsize_import = time.perf_counter() - t
    t = time.perf_counter()
    ours = llmsize.params(config)
    llmsize_first = time.perf_counter() - t
    llmsize_rate = rate(lambda: llmsize.params(config))

    t = time.perf_counter()
    import torch  # noqa: F401  (what accelerate's estimate needs)
    from accelerate import init_empty_weights
    from accelerate.utils import calculate_maximum_sizes
    from transformers import AutoModelForCausalLM, LlamaConfig

    accelerate_import = time.perf_counter() - t

    def estimate():
        cfg = LlamaConfig.from_dict(config)
        with init_empty_weights():
            model = AutoModelForCausalLM.from_config(cfg)
        total_bytes, _largest = calculate_maximum_sizes(model)
        return model.num_parameters(), total_bytes

    t = time.perf_counter()
    theirs, theirs_bytes = estimate()
    accelerate_first = time.perf_counter() - t
    accelerate_rate = rate(estimate, seconds=10.0)

    print(f"Llama-2-7B, Python {sys.version.split()[0]}")
    print(f"{'':12} {'import':>10} {'first call':>12} {'calls/s':>12} {'parameters':>16}")
    print(
        f"{'llmsize':12} {llmsize_import * 1e3:8.1f} ms {llmsize_first * 1e3:9.3f} ms "
        f"{llmsize_rate:12,.0f} {ours['total']:16,}"
    )
    print(
        f"{'accelerate':12} {accelerate_import * 1e3:8.1f} ms {accelerate_first * 1e3:9.1f} ms "
        f"{accelerate_rate:12,.1f} {theirs:16,}"
    )
    print(
        f"accelerate's size: {theirs_bytes:,} bytes, {theirs_bytes / theirs:.0f} bytes a parameter"
        " (the config's torch_dtype)"
    )
    print(f"calls per second: llmsize {llmsize_rate / accelerate_rate:,.0f}× accelerate")
    return 0 if ours["total"] == theirs else 1


if __name__ == "__main__":
    sys.exit(main())
