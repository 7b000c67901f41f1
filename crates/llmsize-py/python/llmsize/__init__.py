"""llmsize: exact Transformer sizes — parameters by component, memory, FLOPs — with the
formulas that give them, from the same engine as the ``llmsize`` command line tool.

Every function takes a *model* as the CLI does — a preset name (``"gpt2"``), a path to a
``config.json``, a directory, a ``.safetensors``/``.gguf`` file, or a Hub repo id in the local
cache — or a ``dict`` config, e.g. ``AutoConfig.from_pretrained(x).to_dict()`` (llmsize never
imports transformers or torch). Results are plain dicts with the keys of the CLI's ``--json``
output; warnings the CLI would print are issued as :class:`LlmsizeWarning`; errors raise the
exception classes below, with the CLI's message.

>>> import llmsize
>>> llmsize.params("gpt2")["total"]
124439808
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _llmsize

__version__: str = _llmsize.__version__

Model = Union[str, "os.PathLike[str]", Mapping[str, Any]]
"""A preset name, a path, a Hub repo id, or a config dict."""

Models = Union[Model, Sequence[Model]]
"""One model, or several side by side (a list or tuple): the answer is then a list."""

Overrides = Union[Mapping[str, Any], Sequence[str], None]
"""Config overrides: ``{"num_key_value_heads": 8}`` or ``["num_key_value_heads=8"]``."""

SweepSpec = Union[str, Mapping[str, Sequence[Any]], None]
"""A sweep over one option: ``"gpu=rtx4090,h100"`` (the CLI's ``--sweep``) or
``{"seq": ["1k", "8k"]}``."""

__all__ = [
    "params",
    "memory",
    "flops",
    "train",
    "inspect",
    "audit",
    "presets",
    "gpus",
    "LlmsizeError",
    "InputError",
    "UnsupportedModel",
    "NotFound",
    "NetworkError",
    "FileError",
    "LlmsizeWarning",
]


class LlmsizeError(Exception):
    """Any error of llmsize; ``hint`` says what to do about it, when there is something."""

    def __init__(self, message: str, hint: Optional[str] = None) -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        message = super().__str__()
        return f"{message}\n  hint: {self.hint}" if self.hint else message


class InputError(LlmsizeError, ValueError):
    """Bad input: a config with a missing or ill-typed key, a size that overflows, an option
    out of range."""


class UnsupportedModel(InputError):
    """A ``model_type`` (or GGUF architecture) llmsize does not count exactly."""


class NotFound(LlmsizeError, LookupError):
    """No such preset, file, cached repo or shard."""


class NetworkError(LlmsizeError, ConnectionError):
    """The Hub could not be reached, or answered unexpectedly (``online=True``)."""


class FileError(LlmsizeError, OSError):
    """A file could not be read."""


class LlmsizeWarning(UserWarning):
    """Something the result depends on that the caller should know (the CLI prints these)."""


_ERRORS = {
    "bad_input": InputError,
    "unsupported": UnsupportedModel,
    "not_found": NotFound,
    "network": NetworkError,
    "io": FileError,
    "internal": LlmsizeError,
}


def _model(model: Model) -> str:
    if isinstance(model, Mapping):
        return json.dumps(dict(model))
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    raise TypeError(
        f"model must be a preset name, a path, a Hub repo id or a config dict, not {type(model).__name__}"
    )


def _models(model: Models) -> List[str]:
    """One model or several: a list or tuple names several, anything else is one."""
    if isinstance(model, (list, tuple)):
        if not model:
            raise ValueError("no model given")
        return [_model(m) for m in model]
    return [_model(model)]


def _hub(
    online: bool, revision: str, file: Optional[str], timeout: Optional[float], jobs: Optional[int]
) -> Any:
    """The Hub options as the native module takes them; ``None`` keeps the CLI's default."""
    return (online, revision, file, None if timeout is None else float(timeout), jobs)


def _sweep(sweep: SweepSpec) -> Optional[str]:
    if sweep is None or isinstance(sweep, str):
        return sweep
    if isinstance(sweep, Mapping) and len(sweep) == 1:
        ((axis, values),) = sweep.items()
        if isinstance(values, (str, int, float)):
            values = [values]
        return f"{axis}=" + ",".join(str(v) for v in values)
    raise TypeError('sweep is a string such as "gpu=rtx4090,h100" or a one-key dict such as {"gpu": ["rtx4090", "h100"]}')


def _str(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def _overrides(set: Overrides) -> List[str]:
    if set is None:
        return []
    if isinstance(set, Mapping):
        return [f"{k}={json.dumps(v)}" for k, v in set.items()]
    if isinstance(set, str):
        return [set]
    return [str(s) for s in set]


def _call(call: Any, *args: Any) -> Any:
    """The native call, its engine error raised as the exception class of its kind."""
    try:
        return call(*args)
    except _llmsize.EngineError as e:
        kind, message, hint = e.args
        raise _ERRORS.get(kind, LlmsizeError)(message, hint) from None


def _answer(call: Any, *args: Any) -> Any:
    text, messages = _call(call, *args)
    for m in messages:
        warnings.warn(m, LlmsizeWarning, stacklevel=3)
    return json.loads(text)


def params(
    model: Models,
    *,
    set: Overrides = None,
    assume: Optional[str] = None,
    text_only: bool = False,
    head: Optional[str] = None,
    online: bool = False,
    revision: str = "main",
    file: Optional[str] = None,
    timeout: Optional[float] = None,
    jobs: Optional[int] = None,
) -> Any:
    """Parameters by component, exactly as the transformers implementation builds them.

    ``head``: ``"config"`` (default: the class the config names), ``"base"`` (the bare model,
    BERT's with pooler) or ``"lm"``. ``assume``: count a model type llmsize does not know as
    this known type (the result then has ``exact: False``); without it an unknown type raises
    ``UnsupportedModel``. ``text_only``: a vision-language model's text tower alone. The
    result has ``exact``, ``total``, ``components`` (17
    categories), ``formulas``, ``non_embedding``, ``assumptions``, … — MoE models add
    ``active_per_token``. Several models (a list) give a list, as the CLI's ``--json`` does.

    Hub options, for every function that reads a model: ``online`` (fetch a repo that is not
    in the local cache: config and weight headers only), ``revision``, ``file`` (one file of a
    repo that holds several, as ``org/name:FILE``), ``timeout`` (seconds, default 30) and
    ``jobs`` (requests in flight, default 8).

    >>> llmsize.params("llama-2-7b")["components"]["lm_head"]
    131072000
    >>> llmsize.params("llama-2-7b", set={"tie_word_embeddings": True})["total"]
    6607343616
    """
    return _answer(
        _llmsize.params,
        _models(model),
        _overrides(set),
        assume,
        text_only,
        head or "config",
        _hub(online, revision, file, timeout, jobs),
    )


def memory(
    model: Models,
    *,
    dtype: Optional[str] = None,
    seq_len: Optional[int] = None,
    batch: Optional[int] = None,
    kv_dtype: Optional[str] = None,
    gpu: Optional[str] = None,
    gpu_mem: Optional[str] = None,
    gpu_bw: Optional[str] = None,
    gpu_tflops: Optional[Union[float, str]] = None,
    tp: Optional[int] = None,
    pp: Optional[int] = None,
    runtime: Optional[str] = None,
    ctx_size: Optional[int] = None,
    n_gpu_layers: Optional[int] = None,
    tensor_split: Optional[Union[str, Sequence[float]]] = None,
    swa_full: bool = False,
    gpu_memory_utilization: Optional[float] = None,
    block_size: Optional[int] = None,
    max_model_len: Optional[int] = None,
    max_num_batched_tokens: Optional[int] = None,
    mla_cache: Optional[str] = None,
    cache: Optional[str] = None,
    overhead_mib: Optional[int] = None,
    max_context: bool = False,
    sweep: SweepSpec = None,
    set: Overrides = None,
    assume: Optional[str] = None,
    text_only: bool = False,
    images: int = 0,
    image_tokens: Optional[int] = None,
    online: bool = False,
    revision: str = "main",
    file: Optional[str] = None,
    timeout: Optional[float] = None,
    jobs: Optional[int] = None,
) -> Any:
    """Memory to serve a model: weights in a format, KV cache, activations, overhead, and
    whether it fits ``gpu`` (``"h100"``, ``"rtx4090x2"``).

    Defaults are the CLI's: ``dtype`` the release's own format (a quantized release as it
    ships; weight files are measured as stored), else bf16; ``seq_len=4096``, ``batch=1``,
    ``kv_dtype="bf16"``. Bytes are plain integers (``weights_bytes``, ``kv_cache_bytes``,
    ``per_gpu_bytes``, …); ``fits`` is set with a GPU. ``images``: images per sequence of a
    vision-language model, whose positions (``image_tokens`` each, or what the config fixes)
    join each sequence.

    A GPU by its figures: ``gpu_mem="24GiB"``, ``gpu_bw="936GB/s"``, ``gpu_tflops=71`` (alone,
    or overriding ``gpu``'s). ``tp``/``pp``: tensor-parallel degree and pipeline stages.

    ``runtime``: ``"transformers"`` (default; ``"llama.cpp"`` for a GGUF file),
    ``"llama.cpp"`` or ``"vllm"``, sized as that runtime allocates, with its own options:
    llama.cpp's ``ctx_size``, ``n_gpu_layers``, ``tensor_split`` (``[3, 1]`` or ``"3,1"``),
    ``swa_full``; vLLM's ``gpu_memory_utilization`` (0.9), ``block_size`` (16),
    ``max_model_len`` and ``max_num_batched_tokens``. The result then has ``serving``.

    Several models (a list) or a ``sweep`` (``"gpu=rtx4090,h100"``, ``"seq=1k,8k,32k"``,
    ``{"batch": [1, 8]}``) give a list, as the CLI's ``--json`` does.

    >>> r = llmsize.memory("llama-2-7b", dtype="q4_k_m", seq_len=8192, gpu="rtx4090")
    >>> r["fits"]
    True
    >>> llmsize.memory("Meta-Llama-3-8B", runtime="vllm", gpu="a100", seq_len=8192)["serving"]["vllm"]["max_sequences"]
    56
    """
    try:
        parts = tensor_split.split(",") if isinstance(tensor_split, str) else tensor_split
        split = [float(x) for x in parts or []]
    except (TypeError, ValueError):
        raise InputError(
            f"tensor_split {tensor_split!r}: expected proportions per GPU",
            'e.g. tensor_split=[3, 1] or "3,1", as llama.cpp\'s --tensor-split',
        ) from None
    return _answer(
        _llmsize.memory,
        _models(model),
        _overrides(set),
        assume,
        text_only,
        images,
        image_tokens,
        dtype,
        seq_len,
        batch,
        kv_dtype,
        gpu,
        _str(gpu_mem),
        _str(gpu_bw),
        _str(gpu_tflops),
        tp,
        pp,
        runtime,
        ctx_size,
        n_gpu_layers,
        split,
        swa_full,
        gpu_memory_utilization,
        block_size,
        max_model_len,
        max_num_batched_tokens,
        mla_cache,
        cache,
        overhead_mib,
        max_context,
        _sweep(sweep),
        _hub(online, revision, file, timeout, jobs),
    )


def flops(
    model: Models,
    *,
    seq_len: Optional[int] = None,
    prompt: Optional[int] = None,
    batch: Optional[int] = None,
    attention: Optional[str] = None,
    gpu: Optional[str] = None,
    dtype: Optional[str] = None,
    kv_dtype: Optional[str] = None,
    mfu: Optional[float] = None,
    bw_eff: Optional[float] = None,
    price: Optional[float] = None,
    sweep: SweepSpec = None,
    set: Overrides = None,
    assume: Optional[str] = None,
    text_only: bool = False,
    images: int = 0,
    image_tokens: Optional[int] = None,
    online: bool = False,
    revision: str = "main",
    file: Optional[str] = None,
    timeout: Optional[float] = None,
    jobs: Optional[int] = None,
) -> Any:
    """FLOPs of a forward pass over ``seq_len`` tokens and of one generated token, by
    component; with ``gpu``, a roofline speed estimate (``speed``).

    ``attention="full"`` counts what torch's FlopCounterMode counts; the default,
    ``"causal"``, the triangle a causal mask keeps. ``prompt``: prompt tokens for the time to
    first token (default ``seq_len``). ``dtype``: the weight format a decode step reads
    (default: a quantized release's own format, else bf16; any ``dtype`` overrides it).
    ``price``: dollars per GPU-hour, for the cost of a million tokens. ``mfu`` (0.5) and
    ``bw_eff`` (0.8): the fractions of peak compute and bandwidth assumed.

    Several models (a list) or a ``sweep`` (``"gpu=rtx4090,a100,h100"``,
    ``"batch=1,8,32"``) give a list, as the CLI's ``--json`` does.

    >>> llmsize.flops("gpt2", seq_len=1024, attention="full")["forward_flops"] > 0
    True
    """
    return _answer(
        _llmsize.flops,
        _models(model),
        _overrides(set),
        assume,
        text_only,
        images,
        image_tokens,
        seq_len,
        prompt,
        batch,
        attention,
        gpu,
        dtype,
        kv_dtype,
        mfu,
        bw_eff,
        price,
        _sweep(sweep),
        _hub(online, revision, file, timeout, jobs),
    )


def train(
    model: Model,
    *,
    seq_len: Optional[int] = None,
    batch: Optional[int] = None,
    dtype: Optional[str] = None,
    precision: Optional[str] = None,
    optimizer: Optional[str] = None,
    attn_impl: Optional[str] = None,
    checkpointing: bool = False,
    device: Optional[str] = None,
    attention: Optional[str] = None,
    freeze: Optional[List[str]] = None,
    lora_rank: Optional[int] = None,
    lora_targets: Optional[Union[str, List[str]]] = None,
    lora_dropout: Optional[float] = None,
    dora: bool = False,
    qlora: bool = False,
    gpu: Optional[str] = None,
    dp: Optional[int] = None,
    tp: Optional[int] = None,
    pp: Optional[int] = None,
    cp: Optional[int] = None,
    ep: Optional[int] = None,
    zero: Optional[int] = None,
    fsdp: Optional[str] = None,
    shard_group: Optional[int] = None,
    sp: bool = False,
    offload_optimizer: bool = False,
    offload_params: bool = False,
    micro_batches: Optional[int] = None,
    interleave: Optional[int] = None,
    max_batch: bool = False,
    max_seq: bool = False,
    tokens: Optional[int] = None,
    mfu: Optional[float] = None,
    price: Optional[float] = None,
    set: Overrides = None,
    assume: Optional[str] = None,
    text_only: bool = False,
    online: bool = False,
    revision: str = "main",
    file: Optional[str] = None,
    timeout: Optional[float] = None,
    jobs: Optional[int] = None,
) -> Dict[str, Any]:
    """One training step: model states, activations held for backward and the forward peak,
    the most loaded GPU under the parallel layout, the step's FLOPs; with ``gpu``, whether it
    fits (``fits``) and, if not, the cheapest changes that make it fit; with ``tokens``, time
    and cost. The keys are ``llmsize train --json``'s.

    ``lora_targets`` is ``"all-linear"`` (default), ``"default"`` (peft's list) or module
    names.

    >>> llmsize.train("llama-2-7b", seq_len=512)["trainable_params"]
    6738415616
    """
    if isinstance(lora_targets, (list, tuple)):
        lora_targets = ",".join(lora_targets)
    return _answer(
        _llmsize.train,
        _model(model),
        _overrides(set),
        assume,
        text_only,
        seq_len,
        batch,
        dtype,
        precision,
        optimizer,
        attn_impl,
        checkpointing,
        device,
        attention,
        list(freeze or []),
        lora_rank,
        lora_targets,
        lora_dropout,
        dora,
        qlora,
        gpu,
        dp,
        tp,
        pp,
        cp,
        ep,
        zero,
        fsdp,
        shard_group,
        sp,
        offload_optimizer,
        offload_params,
        micro_batches,
        interleave,
        max_batch,
        max_seq,
        tokens,
        mfu,
        price,
        _hub(online, revision, file, timeout, jobs),
    )


def inspect(
    path: Union[str, "os.PathLike[str]"],
    *,
    online: bool = False,
    revision: str = "main",
    file: Optional[str] = None,
    timeout: Optional[float] = None,
    jobs: Optional[int] = None,
) -> Dict[str, Any]:
    """The tensors of weight files (SafeTensors, shards, an index, a GGUF, a cached repo) by
    component and dtype, read from their headers only.

    >>> llmsize.inspect("model.safetensors")["total"]  # doctest: +SKIP
    """
    return _answer(_llmsize.inspect, _model(path), _hub(online, revision, file, timeout, jobs))


def audit(
    path: Union[str, "os.PathLike[str]"],
    *,
    online: bool = False,
    revision: str = "main",
    file: Optional[str] = None,
    timeout: Optional[float] = None,
    jobs: Optional[int] = None,
) -> Dict[str, Any]:
    """The config's count against the tensors of the weight files beside it; ``agrees`` is
    true when every category matches.

    >>> llmsize.audit("path/to/model-dir")["agrees"]  # doctest: +SKIP
    """
    return _answer(_llmsize.audit, _model(path), _hub(online, revision, file, timeout, jobs))


def presets() -> List[Dict[str, Any]]:
    """The built-in models: ``id``, ``hf_repo``, ``family``, ``model_type``, ``total``.

    >>> any(p["id"] == "gpt2" for p in llmsize.presets())
    True
    """
    return json.loads(_call(_llmsize.presets))


def gpus() -> List[Dict[str, Any]]:
    """The GPU table ``gpu=`` takes: memory, peak FLOP/s and bandwidth, with their sources.

    >>> any(g["name"] == "h100" for g in llmsize.gpus())  # doctest: +SKIP
    """
    return json.loads(_call(_llmsize.gpus))
