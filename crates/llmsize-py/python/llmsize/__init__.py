"""llmsize: exact Transformer sizes — parameters by component, memory, FLOPs — with the
formulas that give them, from the same engine as the ``llmsize`` command line tool.

Every function takes a *model* as the CLI does — a preset name (``"gpt2"``), a path to a
``config.json``, a directory, a ``.safetensors``/``.gguf`` file, or a Hub repo id in the local
cache — or a ``dict`` config, e.g. ``AutoConfig.from_pretrained(x).to_dict()`` (llmsize never
imports transformers or torch). Results are plain dicts with the keys of the CLI's ``--json``
output; warnings the CLI would print are issued as :class:`LlmsizeWarning`; errors raise the
exception classes below, with the CLI's message. Every bad argument (a wrong type, a negative or
too large integer, NaN or infinity, a config dict JSON cannot hold) raises :class:`InputError`
naming it; the engine's work runs without the GIL, so other threads run meanwhile.

>>> import llmsize
>>> llmsize.params("gpt2")["total"]
124439808
"""

from __future__ import annotations

import json
import math
import numbers
import operator
import os
import reprlib
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

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
    "design",
    "inspect",
    "audit",
    "presets",
    "gpus",
    "LlmsizeError",
    "InputError",
    "InputTypeError",
    "UnsupportedModel",
    "NotFound",
    "NetworkError",
    "FileError",
    "InternalError",
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


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type (``batch="8"``): an :class:`InputError`, and a
    ``TypeError`` as Python's own are."""


class UnsupportedModel(InputError):
    """A ``model_type`` (or GGUF architecture) llmsize does not count exactly."""


class NotFound(LlmsizeError, LookupError):
    """No such preset, file, cached repo or shard."""


class NetworkError(LlmsizeError, ConnectionError):
    """The Hub could not be reached, or answered unexpectedly (``online=True``)."""


class FileError(LlmsizeError, OSError):
    """A file could not be read."""


class InternalError(LlmsizeError, RuntimeError):
    """A bug in llmsize (a panic of the engine, caught): please report it with the call."""


class LlmsizeWarning(UserWarning):
    """Something the result depends on that the caller should know (the CLI prints these)."""


_ERRORS = {
    "bad_input": InputError,
    "unsupported": UnsupportedModel,
    "not_found": NotFound,
    "network": NetworkError,
    "io": FileError,
    "internal": InternalError,
}

# ---------------------------------------------------------------------------------------
# Arguments, checked here so that the native module's conversions (Rust `u64`, `f64`, UTF-8
# `String`) cannot fail: each failure is an InputError naming the argument as the caller
# wrote it, never PyO3's OverflowError, TypeError or UnicodeEncodeError.

_U64 = 2**64 - 1
"""The largest integer the native module takes (a Rust `u64`)."""


def _shown(value: Any) -> str:
    """``value`` as a message shows it: short, whatever its size (a huge int has no repr
    within Python's digit limit) or its ``__repr__``."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"<a {value.bit_length()}-bit integer>"
    try:
        return reprlib.repr(value)
    except Exception:
        return f"<a {type(value).__name__}>"


def _wrong(name: str, value: Any, expected: str) -> InputTypeError:
    return InputTypeError(f"`{name}={_shown(value)}`: expected {expected}, not {type(value).__name__}")


def _count(name: str, value: Any, most: int = _U64) -> Optional[int]:
    """A whole number from 0 to ``most`` (``None`` keeps the default); the engine checks
    its own bounds on what passes."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise _wrong(name, value, "a whole number")
    try:
        n = operator.index(value)
    except TypeError:
        raise _wrong(name, value, "a whole number") from None
    if not 0 <= n <= most:
        raise InputError(f"`{name}={_shown(n)}` is out of range: expected a whole number from 0 to {most:,}")
    return n


def _real(name: str, value: Any) -> Optional[float]:
    """A finite number (``None`` keeps the default)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _wrong(name, value, "a number")
    try:
        x = float(value)
    except OverflowError:
        x = math.inf
    if not math.isfinite(x):
        raise InputError(f"`{name}={_shown(value)}`: expected a finite number")
    return x


def _text(name: str, value: Any) -> Optional[str]:
    """Text the engine can read: a ``str`` that encodes to UTF-8 (``None`` keeps the
    default)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _wrong(name, value, "text (a str)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InputError(f"`{name}={_shown(value)}` is not UTF-8 text: {e.reason} at position {e.start}") from None
    return value


def _figure(name: str, value: Any) -> Optional[str]:
    """A figure the engine parses from text, such as ``"24GiB"``, or a finite number."""
    if value is None or isinstance(value, str):
        return _text(name, value)
    _real(name, value)
    return str(value)


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _wrong(name, value, "True or False")
    return value


def _names(name: str, value: Any) -> List[str]:
    """A list of names (one ``str`` is one name); ``None`` is none."""
    if value is None:
        return []
    return [_text(f"{name}[{i}]", v) or "" for i, v in enumerate(_list(name, value, "a list of names"))]


def _list(name: str, value: Any, expected: str) -> List[Any]:
    """``value``'s items: one ``str`` or number is one item."""
    if isinstance(value, (str, int, float)):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise _wrong(name, value, expected) from None


def _unwritable(value: Any, path: str, open_: frozenset = frozenset()) -> Optional[Tuple[str, str]]:
    """The first place in ``value`` that JSON cannot hold, as (path, why), or ``None``: NaN
    and infinity (``json.dumps`` would write them as non-JSON words the engine cannot read),
    a type ``json`` does not write, a dict that holds itself."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, f"{value}: expected a finite number")
    if value is None or isinstance(value, (str, int)):
        return None
    if id(value) in open_:
        return (path, "the dict or list that holds it: a cycle")
    inner = open_ | {id(value)}
    if isinstance(value, dict):
        items: Any = ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return (path, f"of type `{type(value).__name__}`: expected a number, text, a bool, None, a list or a dict")
    return next((bad for p, v in items if (bad := _unwritable(v, p, inner))), None)


def _json(name: str, value: Any, path: str = "") -> str:
    """``value`` as JSON, or an InputError naming the key JSON cannot hold."""
    try:
        return json.dumps(value, allow_nan=False)
    except (ValueError, TypeError, RecursionError) as e:
        try:
            where = _unwritable(value, path)
        except RecursionError:
            where = None
        if where is None:
            raise InputError(f"`{name}`: not writable as JSON: {e}") from None
        key, why = where
        raise InputError(f"`{name}`: key `{key}` is {why}") from None


def _model(model: Model, name: str = "model") -> str:
    if isinstance(model, Mapping):
        return _json(name, model if isinstance(model, dict) else dict(model))
    if isinstance(model, os.PathLike):
        model = os.fsdecode(model)
    if isinstance(model, str):
        return _text(name, model) or ""
    raise _wrong(name, model, "a preset name, a path, a Hub repo id or a config dict")


def _models(model: Models) -> List[str]:
    """One model or several: a list or tuple names several, anything else is one."""
    if isinstance(model, (list, tuple)):
        if not model:
            raise InputError("`model=[]`: no model given")
        return [_model(m, f"model[{i}]") for i, m in enumerate(model)]
    return [_model(model)]


def _hub(online: Any, revision: Any, file: Any, timeout: Any, jobs: Any, deadline: Any) -> Any:
    """The Hub options as the native module takes them; ``None`` keeps the CLI's default."""
    revision = "main" if revision is None else _text("revision", revision)
    return (_flag("online", online), revision, _text("file", file), _real("timeout", timeout), _count("jobs", jobs),
            _real("deadline", deadline))


def _sweep(sweep: SweepSpec) -> Optional[str]:
    if sweep is None or isinstance(sweep, str):
        return _text("sweep", sweep)
    if isinstance(sweep, Mapping) and len(sweep) == 1:
        ((axis, values),) = sweep.items()
        where = f"sweep[{_shown(axis)}]"
        points = [_figure(where, v) or "" for v in _list(where, values, "a list of values")]
        return _text("sweep", f"{axis}=" + ",".join(points))
    raise _wrong(
        "sweep", sweep, 'a string such as "gpu=rtx4090,h100" or a one-key dict such as {"gpu": ["rtx4090", "h100"]}'
    )


def _overrides(set: Overrides) -> List[str]:
    if set is None:
        return []
    if isinstance(set, Mapping):
        return [_text("set", f"{k}={_json('set', v, str(k))}") or "" for k, v in set.items()]
    return _names("set", set)


def _proportions(name: str, value: Any) -> List[float]:
    """llama.cpp's proportions per GPU: ``[3, 1]`` or ``"3,1"``."""
    try:
        parts = value.split(",") if isinstance(value, str) else value
        split = [float(x) for x in parts or []]
    except (TypeError, ValueError, OverflowError):
        split = [math.nan]
    if not all(map(math.isfinite, split)):
        raise InputError(
            f"`{name}={_shown(value)}`: expected proportions per GPU",
            'e.g. tensor_split=[3, 1] or "3,1", as llama.cpp\'s --tensor-split',
        )
    return split


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
    deadline: Optional[float] = None,
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
    repo that holds several, as ``org/name:FILE``), ``timeout`` (seconds a read may wait, default 30),
    ``deadline`` (seconds one file's whole transfer may take, default 120) and ``jobs``
    (requests in flight, default 8).

    >>> llmsize.params("llama-2-7b")["components"]["lm_head"]
    131072000
    >>> llmsize.params("llama-2-7b", set={"tie_word_embeddings": True})["total"]
    6607343616
    """
    return _answer(
        _llmsize.params,
        _models(model),
        _overrides(set),
        _text("assume", assume),
        _flag("text_only", text_only),
        _text("head", head) or "config",
        _hub(online, revision, file, timeout, jobs, deadline),
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
    deadline: Optional[float] = None,
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
    return _answer(
        _llmsize.memory,
        _models(model),
        _overrides(set),
        _text("assume", assume),
        _flag("text_only", text_only),
        _count("images", images),
        _count("image_tokens", image_tokens),
        _text("dtype", dtype),
        _count("seq_len", seq_len),
        _count("batch", batch),
        _text("kv_dtype", kv_dtype),
        _text("gpu", gpu),
        _figure("gpu_mem", gpu_mem),
        _figure("gpu_bw", gpu_bw),
        _figure("gpu_tflops", gpu_tflops),
        _count("tp", tp),
        _count("pp", pp),
        _text("runtime", runtime),
        _count("ctx_size", ctx_size),
        _count("n_gpu_layers", n_gpu_layers),
        _proportions("tensor_split", tensor_split),
        _flag("swa_full", swa_full),
        _real("gpu_memory_utilization", gpu_memory_utilization),
        _count("block_size", block_size),
        _count("max_model_len", max_model_len),
        _count("max_num_batched_tokens", max_num_batched_tokens),
        _text("mla_cache", mla_cache),
        _text("cache", cache),
        _count("overhead_mib", overhead_mib),
        _flag("max_context", max_context),
        _sweep(sweep),
        _hub(online, revision, file, timeout, jobs, deadline),
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
    deadline: Optional[float] = None,
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
        _text("assume", assume),
        _flag("text_only", text_only),
        _count("images", images),
        _count("image_tokens", image_tokens),
        _count("seq_len", seq_len),
        _count("prompt", prompt),
        _count("batch", batch),
        _text("attention", attention),
        _text("gpu", gpu),
        _text("dtype", dtype),
        _text("kv_dtype", kv_dtype),
        _real("mfu", mfu),
        _real("bw_eff", bw_eff),
        _real("price", price),
        _sweep(sweep),
        _hub(online, revision, file, timeout, jobs, deadline),
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
    deadline: Optional[float] = None,
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
    if lora_targets is not None and not isinstance(lora_targets, str):
        lora_targets = ",".join(_names("lora_targets", lora_targets))
    return _answer(
        _llmsize.train,
        _model(model),
        _overrides(set),
        _text("assume", assume),
        _flag("text_only", text_only),
        _count("seq_len", seq_len),
        _count("batch", batch),
        _text("dtype", dtype),
        _text("precision", precision),
        _text("optimizer", optimizer),
        _text("attn_impl", attn_impl),
        _flag("checkpointing", checkpointing),
        _text("device", device),
        _text("attention", attention),
        _names("freeze", freeze),
        _count("lora_rank", lora_rank),
        _text("lora_targets", lora_targets),
        _real("lora_dropout", lora_dropout),
        _flag("dora", dora),
        _flag("qlora", qlora),
        _text("gpu", gpu),
        _count("dp", dp),
        _count("tp", tp),
        _count("pp", pp),
        _count("cp", cp),
        _count("ep", ep),
        _count("zero", zero, most=255),
        _text("fsdp", fsdp),
        _count("shard_group", shard_group),
        _flag("sp", sp),
        _flag("offload_optimizer", offload_optimizer),
        _flag("offload_params", offload_params),
        _count("micro_batches", micro_batches),
        _count("interleave", interleave),
        _flag("max_batch", max_batch),
        _flag("max_seq", max_seq),
        _count("tokens", tokens),
        _real("mfu", mfu),
        _real("price", price),
        _hub(online, revision, file, timeout, jobs, deadline),
    )


_DESIGN_TARGETS = ("params", "memory", "train_memory", "compute")
_DESIGN_TRAINING = ("batch", "precision", "optimizer", "checkpointing", "lora_rank", "zero", "dp")


def _design_together(given: Dict[str, Any]) -> None:
    """Which of ``design``'s options go together: the CLI's clap rules (one target; the
    training options with ``train_memory``; ``non_embedding``/``active`` with ``params``;
    ``qlora`` with ``lora_rank``; ``style`` or ``like``; ``kv_heads`` or ``gqa_group``), in
    Python's spelling. ``tests/test_llmsize.py`` checks that the CLI refuses each too."""
    targets = [k for k in _DESIGN_TARGETS if given.get(k) is not None]
    if len(targets) > 1:
        raise InputError(f"`{targets[0]}=` and `{targets[1]}=` are two targets: give one")
    for key in _DESIGN_TRAINING:
        if given.get(key) not in (None, False) and targets and targets[0] != "train_memory":
            raise InputError(f"`{key}=` is an option of `train_memory=`, not of `{targets[0]}=`")
    for key in ("non_embedding", "active"):
        if given.get(key) and given.get("params") is None:
            raise InputError(f"`{key}=True` needs `params=`")
    pairs = (("non_embedding", "active"), ("style", "like"), ("kv_heads", "gqa_group"))
    for a, b in pairs:
        if given.get(a) not in (None, False, []) and given.get(b) not in (None, False, []):
            raise InputError(f"`{a}=` and `{b}=` cannot be given together")
    if given.get("qlora") and given.get("lora_rank") is None:
        raise InputError("`qlora=True` needs `lora_rank=`")


def _counts(name: str, value: Any) -> List[int]:
    """A list of whole numbers: ``[64, 128]``, one number, or the CLI's ``"64,128"``."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else _list(name, value, "a list of whole numbers")
    out = []
    for i, v in enumerate(items):
        if isinstance(v, str):
            try:
                v = int(v.strip())
            except ValueError:
                raise _wrong(f"{name}[{i}]", v, "a whole number") from None
        out.append(_count(f"{name}[{i}]", v) or 0)
    return out


def design(
    *,
    params: Optional[Union[str, int, float]] = None,
    non_embedding: bool = False,
    active: bool = False,
    memory: Optional[str] = None,
    train_memory: Optional[str] = None,
    compute: Optional[Union[str, float]] = None,
    fit: Optional[str] = None,
    tolerance: Optional[Union[str, float]] = None,
    dtype: Optional[str] = None,
    kv_dtype: Optional[str] = None,
    ctx: Optional[int] = None,
    batch: Optional[int] = None,
    precision: Optional[str] = None,
    optimizer: Optional[str] = None,
    checkpointing: bool = False,
    lora_rank: Optional[int] = None,
    qlora: bool = False,
    zero: Optional[int] = None,
    dp: Optional[int] = None,
    style: Optional[str] = None,
    like: Optional[Model] = None,
    experts: Optional[int] = None,
    top_k: Optional[int] = None,
    vocab: Optional[int] = None,
    head_dim: Optional[Union[int, str, Sequence[int]]] = None,
    kv_heads: Optional[Union[int, str, Sequence[int]]] = None,
    gqa_group: Optional[Union[int, str, Sequence[int]]] = None,
    ffn_rule: Optional[str] = None,
    multiple_of: Optional[int] = None,
    align: Optional[int] = None,
    tp: Optional[int] = None,
    pp: Optional[int] = None,
    aspect: Optional[str] = None,
    prefer_aspect: Optional[Union[str, float]] = None,
    hidden_range: Optional[str] = None,
    layers_range: Optional[str] = None,
    top: Optional[int] = None,
    online: bool = False,
    revision: str = "main",
    file: Optional[str] = None,
    timeout: Optional[float] = None,
    jobs: Optional[int] = None,
    deadline: Optional[float] = None,
) -> Dict[str, Any]:
    """Inverse sizing, as ``llmsize design --json``: the shapes that reach a target —
    ``params`` (``"7B"``, ``"8.03B"``), ``memory`` (``"24GiB"``: weights and KV cache),
    ``train_memory`` (``"80GiB"`` or a GPU, ``"h100"``: one training step per GPU, with the
    training options ``batch``, ``precision``, ``optimizer``, ``checkpointing``,
    ``lora_rank``, ``qlora``, ``zero``, ``dp``) or ``compute`` (``"1e23"`` FLOPs, by
    ``fit``) — for a block ``style`` (``"llama"``, ``"gpt"``, ``"moe"``) or a model to
    resize (``like``: a preset, a path or a config dict), under the constraints (``vocab``,
    ``head_dim``, ``kv_heads``/``gqa_group``, ``ffn_rule``, ``multiple_of``, ``align``,
    ``tp``, ``pp``, ``aspect``, ``prefer_aspect``, ``hidden_range``, ``layers_range``).
    Each option takes what the CLI's option of the same name takes, read by the same parser.

    >>> llmsize.design(style="llama", params="7B", top=1)["candidates"][0]["total"] > 6.9e9
    True
    """
    given = dict(params=params, memory=memory, train_memory=train_memory, compute=compute, batch=batch,
                 precision=precision, optimizer=optimizer, checkpointing=checkpointing, lora_rank=lora_rank,
                 zero=zero, dp=dp, non_embedding=non_embedding, active=active, style=style, like=like,
                 kv_heads=kv_heads, gqa_group=gqa_group, qlora=qlora)
    _design_together(given)
    return _answer(
        _llmsize.design,
        _figure("params", params),
        _flag("non_embedding", non_embedding),
        _flag("active", active),
        _text("memory", memory),
        _text("train_memory", train_memory),
        _figure("compute", compute),
        _text("fit", fit),
        _figure("tolerance", tolerance),
        _text("dtype", dtype),
        _text("kv_dtype", kv_dtype),
        _count("ctx", ctx),
        _count("batch", batch),
        _text("precision", precision),
        _text("optimizer", optimizer),
        _flag("checkpointing", checkpointing),
        _count("lora_rank", lora_rank),
        _flag("qlora", qlora),
        _count("zero", zero, most=255),
        _count("dp", dp),
        _text("style", style),
        None if like is None else _model(like, "like"),
        _count("experts", experts),
        _count("top_k", top_k),
        _count("vocab", vocab),
        _counts("head_dim", head_dim),
        _counts("kv_heads", kv_heads),
        _counts("gqa_group", gqa_group),
        _text("ffn_rule", ffn_rule),
        _count("multiple_of", multiple_of),
        _count("align", align),
        _count("tp", tp),
        _count("pp", pp),
        _text("aspect", aspect),
        _figure("prefer_aspect", prefer_aspect),
        _text("hidden_range", hidden_range),
        _text("layers_range", layers_range),
        _count("top", top),
        _hub(online, revision, file, timeout, jobs, deadline),
    )


def inspect(
    path: Union[str, "os.PathLike[str]"],
    *,
    online: bool = False,
    revision: str = "main",
    file: Optional[str] = None,
    timeout: Optional[float] = None,
    jobs: Optional[int] = None,
    deadline: Optional[float] = None,
) -> Dict[str, Any]:
    """The tensors of weight files (SafeTensors, shards, an index, a GGUF, a cached repo) by
    component and dtype, read from their headers only.

    >>> llmsize.inspect("model.safetensors")["total"]  # doctest: +SKIP
    """
    return _answer(_llmsize.inspect, _model(path, "path"), _hub(online, revision, file, timeout, jobs, deadline))


def audit(
    path: Union[str, "os.PathLike[str]"],
    *,
    online: bool = False,
    revision: str = "main",
    file: Optional[str] = None,
    timeout: Optional[float] = None,
    jobs: Optional[int] = None,
    deadline: Optional[float] = None,
) -> Dict[str, Any]:
    """The config's count against the tensors of the weight files beside it; ``agrees`` is
    true when every category matches.

    >>> llmsize.audit("path/to/model-dir")["agrees"]  # doctest: +SKIP
    """
    return _answer(_llmsize.audit, _model(path, "path"), _hub(online, revision, file, timeout, jobs, deadline))


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
