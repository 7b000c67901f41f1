"""Type stubs of the native module (``llmsize._llmsize``); use the ``llmsize`` functions."""

from typing import List, Optional, Tuple

__version__: str

# (online, revision, file, timeout seconds, jobs, deadline seconds); None keeps the CLI's default.
Hub = Tuple[bool, str, Optional[str], Optional[float], Optional[int], Optional[float]]

class EngineError(Exception):
    """args: (kind, message, hint); kind ``"internal"`` is also a panic of the engine, caught.

    Every function runs its engine work without the GIL. Arguments are taken as checked by
    the ``llmsize`` package (in range for their Rust types, finite, UTF-8)."""

def params(
    models: List[str],
    set: List[str],
    assume: Optional[str],
    text_only: bool,
    head: str,
    hub_options: Hub,
) -> Tuple[str, List[str]]: ...
def memory(
    models: List[str],
    set: List[str],
    assume: Optional[str],
    text_only: bool,
    images: int,
    image_tokens: Optional[int],
    dtype: Optional[str],
    seq_len: Optional[int],
    batch: Optional[int],
    kv_dtype: Optional[str],
    gpu: Optional[str],
    gpu_mem: Optional[str],
    gpu_bw: Optional[str],
    gpu_tflops: Optional[str],
    tp: Optional[int],
    pp: Optional[int],
    runtime_name: Optional[str],
    ctx_size: Optional[int],
    n_gpu_layers: Optional[int],
    tensor_split: List[float],
    swa_full: bool,
    gpu_memory_utilization: Optional[float],
    block_size: Optional[int],
    max_model_len: Optional[int],
    max_num_batched_tokens: Optional[int],
    mla_cache: Optional[str],
    cache: Optional[str],
    overhead_mib: Optional[int],
    max_context: bool,
    sweep_text: Optional[str],
    hub_options: Hub,
) -> Tuple[str, List[str]]: ...
def flops(
    models: List[str],
    set: List[str],
    assume: Optional[str],
    text_only: bool,
    images: int,
    image_tokens: Optional[int],
    seq_len: Optional[int],
    prompt: Optional[int],
    batch: Optional[int],
    attention: Optional[str],
    gpu: Optional[str],
    dtype: Optional[str],
    kv_dtype: Optional[str],
    mfu: Optional[float],
    bw_eff: Optional[float],
    price: Optional[float],
    sweep_text: Optional[str],
    hub_options: Hub,
) -> Tuple[str, List[str]]: ...
def train(
    model: str,
    set: List[str],
    assume: Optional[str],
    text_only: bool,
    seq_len: Optional[int],
    batch: Optional[int],
    dtype: Optional[str],
    precision: Optional[str],
    optimizer: Optional[str],
    attn_impl: Optional[str],
    checkpointing: bool,
    device: Optional[str],
    attention: Optional[str],
    freeze: List[str],
    lora_rank: Optional[int],
    lora_targets: Optional[str],
    lora_dropout: Optional[float],
    dora: bool,
    qlora: bool,
    gpu: Optional[str],
    dp: Optional[int],
    tp: Optional[int],
    pp: Optional[int],
    cp: Optional[int],
    ep: Optional[int],
    zero: Optional[int],
    fsdp: Optional[str],
    shard_group: Optional[int],
    sp: bool,
    offload_optimizer: bool,
    offload_params: bool,
    micro_batches: Optional[int],
    interleave: Optional[int],
    max_batch: bool,
    max_seq: bool,
    tokens: Optional[int],
    mfu: Optional[float],
    price: Optional[float],
    hub_options: Hub,
) -> Tuple[str, List[str]]: ...
def inspect(model: str, hub_options: Hub) -> Tuple[str, List[str]]: ...
def audit(model: str, hub_options: Hub) -> Tuple[str, List[str]]: ...
def presets() -> str: ...
def gpus() -> str: ...
