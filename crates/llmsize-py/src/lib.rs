//! `llmsize._llmsize`: the engine as a Python module. Each function takes the options of the
//! CLI command of the same name, calls `llmsize-engine`, and returns the command's `--json`
//! text (the same serializer as the CLI, so the keys are the JSON contract's) and the warnings
//! the CLI would print. The Python package `llmsize` turns these into dicts, warnings and
//! typed exceptions; no formula is written here.
//!
//! Arguments arrive checked by the package (types, ranges of the native integers, finite
//! floats), so a conversion here does not fail. Engine work runs through [`run`]: without
//! the GIL, and with a panic caught.

use llmsize_engine::{
    AttentionConvention, AuditRequest, CachePolicy, CustomGpuFlags, DesignTrain, Engine, Error,
    ErrorKind, FlopsRequest, HeadChoice, HubEnv, HubOptions, InspectRequest, MemoryRequest,
    MlaCache, OptimalRule, Parallelism, ParamsRequest, Runtime, RuntimeFlags, Sweep, TrainRequest,
};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

pyo3::create_exception!(
    _llmsize,
    EngineError,
    PyException,
    "An error of the engine: args are (kind, message, hint)."
);

/// An engine over the process environment (`HF_HOME`, `HF_TOKEN`, …), as the CLI has.
fn engine() -> Engine {
    Engine::new(HubEnv::from_vars(|k| std::env::var_os(k)))
}

/// The engine's error as `EngineError(kind, message, hint)`; the Python side raises the
/// exception class of the kind.
fn to_py(e: &Error) -> PyErr {
    let kind = match e.kind() {
        ErrorKind::BadInput => "bad_input",
        ErrorKind::NotFound => "not_found",
        ErrorKind::Unsupported => "unsupported",
        ErrorKind::Io => "io",
        ErrorKind::Network => "network",
        _ => "internal",
    };
    EngineError::new_err((kind, e.to_string(), e.hint().map(str::to_owned)))
}

fn bad_input(message: String, hint: &str) -> PyErr {
    EngineError::new_err(("bad_input", message, Some(hint.to_owned())))
}

/// Engine work, run without the GIL so that other Python threads run meanwhile (the
/// closure owns its request, hence `Send`), and with a panic caught: a bug in the engine is
/// `EngineError("internal", …)`, which `except Exception` catches, and not the
/// `PanicException` that `PyO3` raises otherwise, a `BaseException`.
fn run<T: Send>(py: Python<'_>, work: impl FnOnce() -> Result<T, Error> + Send) -> PyResult<T> {
    match py.detach(|| caught(work)) {
        Ok(done) => done.map_err(|e| to_py(&e)),
        Err(message) => Err(EngineError::new_err((
            "internal",
            format!("internal error: the engine panicked: {message}"),
            Some("a bug in llmsize: please report it with the call that caused it".to_owned()),
        ))),
    }
}

/// `work`'s value, or the message of its panic. Unwind safety is asserted: the work owns its
/// request and its engine, and nothing it touched is looked at after a panic.
fn caught<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned())
    })
}

/// The Hub options every model-reading function takes, as Python passes them:
/// `(online, revision, file, timeout seconds, jobs, deadline seconds)`; `None` keeps the
/// CLI's default.
type Hub = (
    bool,
    String,
    Option<String>,
    Option<f64>,
    Option<u64>,
    Option<f64>,
);

/// Seconds as the CLI's `--timeout` and `--deadline` take them: more than 0, at most a day.
fn seconds(
    name: &str,
    value: Option<f64>,
    default: std::time::Duration,
) -> PyResult<std::time::Duration> {
    match value {
        None => Ok(default),
        Some(secs) if secs > 0.0 && secs <= 86_400.0 => {
            Ok(std::time::Duration::from_secs_f64(secs))
        }
        Some(secs) => Err(bad_input(
            format!("`{name}={secs}`: a {name} is more than 0 and at most 86400 seconds"),
            &format!("give seconds, e.g. `{name}=30`"),
        )),
    }
}

/// The Hub options, checked as the CLI's `--timeout`, `--jobs` and `--deadline` are.
fn hub((online, revision, file, timeout, jobs, deadline): Hub) -> PyResult<HubOptions> {
    let timeout = seconds("timeout", timeout, HubOptions::DEFAULT_TIMEOUT)?;
    let deadline = seconds("deadline", deadline, HubOptions::DEFAULT_DEADLINE)?;
    let jobs = match jobs {
        None => HubOptions::DEFAULT_JOBS,
        Some(n @ 1..=64) => usize::try_from(n).unwrap_or(HubOptions::DEFAULT_JOBS),
        Some(n) => {
            return Err(bad_input(
                format!("`jobs={n}`: requests in flight at once are 1 to 64"),
                "the default, 8, is what `huggingface_hub` uses",
            ));
        }
    };
    Ok(HubOptions {
        online,
        revision,
        file,
        timeout,
        jobs,
        deadline,
    })
}

/// `sweep="gpu=rtx4090,h100"`, parsed as the CLI's `--sweep` (engine work: inside [`run`]).
fn sweep(text: Option<&str>) -> Result<Option<Sweep>, Error> {
    text.map(Sweep::parse).transpose()
}

/// `runtime=`, the names (and aliases) the CLI's `--runtime` takes.
fn runtime(name: Option<&str>) -> PyResult<Option<Runtime>> {
    match name {
        None => Ok(None),
        Some("transformers") => Ok(Some(Runtime::Transformers)),
        Some("llama.cpp" | "llamacpp" | "llama-cpp") => Ok(Some(Runtime::LlamaCpp)),
        Some("vllm") => Ok(Some(Runtime::Vllm)),
        Some(other) => Err(bad_input(
            format!("runtime `{other}`: expected `transformers`, `llama.cpp` or `vllm`"),
            "the default is llama.cpp for a GGUF file, else transformers",
        )),
    }
}

/// JSON text and warnings.
type Answer = (String, Vec<String>);

/// `llmsize params`.
#[pyfunction]
#[pyo3(signature = (models, set, assume, text_only, head, hub_options))]
fn params(
    py: Python<'_>,
    models: Vec<String>,
    set: Vec<String>,
    assume: Option<String>,
    text_only: bool,
    head: &str,
    hub_options: Hub,
) -> PyResult<Answer> {
    let head = match head {
        "config" => HeadChoice::Config,
        "base" => HeadChoice::Base,
        "lm" => HeadChoice::Lm,
        other => {
            return Err(bad_input(
                format!("head `{other}`: expected `config`, `base` or `lm`"),
                "`config` counts the class the config names, `base` the bare model",
            ));
        }
    };
    let request = ParamsRequest {
        models,
        overrides: set,
        assume,
        text_only,
        head,
        hub: hub(hub_options)?,
        design: None,
    };
    run(py, move || {
        let outcome = engine().params(&request)?;
        Ok((outcome.to_json()?, outcome.warnings))
    })
}

/// `llmsize memory`; `None` keeps the CLI's default.
#[pyfunction]
#[pyo3(signature = (models, set, assume, text_only, images, image_tokens, dtype, seq_len, batch, kv_dtype, gpu, gpu_mem, gpu_bw, gpu_tflops, tp, pp, runtime_name, ctx_size, n_gpu_layers, tensor_split, swa_full, gpu_memory_utilization, block_size, max_model_len, max_num_batched_tokens, mla_cache, cache, overhead_mib, max_context, sweep_text, hub_options))]
fn memory(
    py: Python<'_>,
    models: Vec<String>,
    set: Vec<String>,
    assume: Option<String>,
    text_only: bool,
    images: u64,
    image_tokens: Option<u64>,
    dtype: Option<String>,
    seq_len: Option<u64>,
    batch: Option<u64>,
    kv_dtype: Option<String>,
    gpu: Option<String>,
    gpu_mem: Option<String>,
    gpu_bw: Option<String>,
    gpu_tflops: Option<String>,
    tp: Option<u64>,
    pp: Option<u64>,
    runtime_name: Option<&str>,
    ctx_size: Option<u64>,
    n_gpu_layers: Option<u64>,
    tensor_split: Vec<f64>,
    swa_full: bool,
    gpu_memory_utilization: Option<f64>,
    block_size: Option<u64>,
    max_model_len: Option<u64>,
    max_num_batched_tokens: Option<u64>,
    mla_cache: Option<&str>,
    cache: Option<&str>,
    overhead_mib: Option<u64>,
    max_context: bool,
    sweep_text: Option<&str>,
    hub_options: Hub,
) -> PyResult<Answer> {
    let mut r = MemoryRequest::new(String::new());
    r.models = models;
    r.overrides = set;
    r.assume = assume;
    r.text_only = text_only;
    r.images = images;
    r.image_tokens = image_tokens;
    r.hub = hub(hub_options)?;
    r.dtype = dtype;
    r.seq_len = seq_len.or(r.seq_len);
    r.batch = batch.unwrap_or(r.batch);
    r.kv_dtype = kv_dtype.or(r.kv_dtype);
    r.gpu = gpu;
    r.custom_gpu = CustomGpuFlags {
        memory: gpu_mem,
        bandwidth: gpu_bw,
        tflops: gpu_tflops,
    };
    r.tp = tp;
    r.pp = pp;
    let d = RuntimeFlags::default();
    r.runtime = RuntimeFlags {
        runtime: runtime(runtime_name)?,
        ctx_size,
        n_gpu_layers,
        tensor_split,
        swa_full,
        gpu_memory_utilization: gpu_memory_utilization.unwrap_or(d.gpu_memory_utilization),
        block_size: block_size.unwrap_or(d.block_size),
        max_model_len,
        max_num_batched_tokens,
    };
    r.mla_cache = match mla_cache {
        None | Some("latent") => MlaCache::Latent,
        Some("expanded") => MlaCache::Expanded,
        Some(other) => {
            return Err(bad_input(
                format!("mla_cache `{other}`: expected `latent` or `expanded`"),
                "`latent` is what vLLM, SGLang and transformers cache",
            ));
        }
    };
    r.cache = match cache {
        None | Some("transformers") => CachePolicy::Transformers,
        Some("runtime") => CachePolicy::Runtime,
        Some(other) => {
            return Err(bad_input(
                format!("cache `{other}`: expected `transformers` or `runtime`"),
                "`runtime` sizes a serving runtime's cache (whole windows, grouped heads)",
            ));
        }
    };
    r.overhead_mib = overhead_mib.unwrap_or(r.overhead_mib);
    r.max_context = max_context;
    run(py, move || {
        r.sweep = sweep(sweep_text)?;
        let outcome = engine().memory(&r)?;
        Ok((outcome.to_json()?, outcome.warnings))
    })
}

/// `llmsize flops`; `None` keeps the CLI's default.
#[pyfunction]
#[pyo3(signature = (models, set, assume, text_only, images, image_tokens, seq_len, prompt, batch, attention, gpu, dtype, kv_dtype, mfu, bw_eff, price, sweep_text, hub_options))]
fn flops(
    py: Python<'_>,
    models: Vec<String>,
    set: Vec<String>,
    assume: Option<String>,
    text_only: bool,
    images: u64,
    image_tokens: Option<u64>,
    seq_len: Option<u64>,
    prompt: Option<u64>,
    batch: Option<u64>,
    attention: Option<&str>,
    gpu: Option<String>,
    dtype: Option<String>,
    kv_dtype: Option<String>,
    mfu: Option<f64>,
    bw_eff: Option<f64>,
    price: Option<f64>,
    sweep_text: Option<&str>,
    hub_options: Hub,
) -> PyResult<Answer> {
    let mut r = FlopsRequest::new(String::new());
    r.models = models;
    r.overrides = set;
    r.assume = assume;
    r.text_only = text_only;
    r.images = images;
    r.image_tokens = image_tokens;
    r.hub = hub(hub_options)?;
    r.seq_len = seq_len.or(r.seq_len);
    r.prompt = prompt;
    r.batch = batch.unwrap_or(r.batch);
    r.attention = match attention {
        None | Some("causal") => AttentionConvention::Causal,
        Some("full") => AttentionConvention::Full,
        Some(other) => {
            return Err(bad_input(
                format!("attention `{other}`: expected `causal` or `full`"),
                "`full` is what torch's FlopCounterMode counts",
            ));
        }
    };
    r.gpu = gpu;
    r.dtype = dtype;
    r.kv_dtype = kv_dtype.unwrap_or(r.kv_dtype);
    r.mfu = mfu.unwrap_or(r.mfu);
    r.bw_eff = bw_eff.unwrap_or(r.bw_eff);
    r.price = price;
    run(py, move || {
        r.sweep = sweep(sweep_text)?;
        let outcome = engine().flops(&r)?;
        Ok((outcome.to_json()?, outcome.warnings))
    })
}

/// `llmsize train`; `None` keeps the CLI's default.
#[pyfunction]
#[pyo3(signature = (model, set, assume, text_only, seq_len, batch, dtype, precision, optimizer, attn_impl, checkpointing, device, attention, freeze, lora_rank, lora_targets, lora_dropout, dora, qlora, gpu, dp, tp, pp, cp, ep, zero, fsdp, shard_group, sp, offload_optimizer, offload_params, micro_batches, interleave, max_batch, max_seq, tokens, mfu, price, hub_options))]
fn train(
    py: Python<'_>,
    model: String,
    set: Vec<String>,
    assume: Option<String>,
    text_only: bool,
    seq_len: Option<u64>,
    batch: Option<u64>,
    dtype: Option<String>,
    precision: Option<String>,
    optimizer: Option<String>,
    attn_impl: Option<String>,
    checkpointing: bool,
    device: Option<String>,
    attention: Option<&str>,
    freeze: Vec<String>,
    lora_rank: Option<u64>,
    lora_targets: Option<String>,
    lora_dropout: Option<f64>,
    dora: bool,
    qlora: bool,
    gpu: Option<String>,
    dp: Option<u64>,
    tp: Option<u64>,
    pp: Option<u64>,
    cp: Option<u64>,
    ep: Option<u64>,
    zero: Option<u8>,
    fsdp: Option<String>,
    shard_group: Option<u64>,
    sp: bool,
    offload_optimizer: bool,
    offload_params: bool,
    micro_batches: Option<u64>,
    interleave: Option<u64>,
    max_batch: bool,
    max_seq: bool,
    tokens: Option<u64>,
    mfu: Option<f64>,
    price: Option<f64>,
    hub_options: Hub,
) -> PyResult<Answer> {
    let mut r = TrainRequest::new(model);
    r.overrides = set;
    r.assume = assume;
    r.text_only = text_only;
    r.hub = hub(hub_options)?;
    r.seq_len = seq_len.unwrap_or(r.seq_len);
    r.batch = batch.unwrap_or(r.batch);
    r.dtype = dtype.unwrap_or(r.dtype);
    r.precision = precision.unwrap_or(r.precision);
    r.optimizer = optimizer.unwrap_or(r.optimizer);
    r.attn_impl = attn_impl.unwrap_or(r.attn_impl);
    r.checkpointing = checkpointing;
    r.device = device.unwrap_or(r.device);
    r.attention = match attention {
        None | Some("causal") => AttentionConvention::Causal,
        Some("full") => AttentionConvention::Full,
        Some(other) => {
            return Err(bad_input(
                format!("attention `{other}`: expected `causal` or `full`"),
                "`full` is what torch's FlopCounterMode counts",
            ));
        }
    };
    r.freeze = freeze;
    r.lora_rank = lora_rank;
    r.lora_targets = lora_targets.unwrap_or(r.lora_targets);
    r.lora_dropout = lora_dropout.unwrap_or(r.lora_dropout);
    r.dora = dora;
    r.qlora = qlora;
    r.gpu = gpu;
    r.dp = dp;
    let d = Parallelism::default();
    r.parallel = Parallelism {
        dp: 1,
        tp: tp.unwrap_or(d.tp),
        pp: pp.unwrap_or(d.pp),
        cp: cp.unwrap_or(d.cp),
        ep: ep.unwrap_or(d.ep),
        zero: zero.unwrap_or(d.zero),
        shard_group,
        sequence_parallel: sp,
        offload_optimizer,
        offload_params,
        micro_batches: micro_batches.unwrap_or(d.micro_batches),
        interleave: interleave.unwrap_or(d.interleave),
    };
    r.fsdp = fsdp;
    r.micro_batches_default = micro_batches.is_none();
    r.max_batch = max_batch;
    r.max_seq = max_seq;
    r.tokens = tokens;
    r.mfu = mfu.unwrap_or(r.mfu);
    r.price = price;
    run(py, move || {
        let outcome = engine().train(&r)?;
        Ok((outcome.to_json()?, outcome.warnings))
    })
}

/// A text option read by the engine's parser (`llmsize_engine::design_args`), its message
/// naming the keyword as the caller wrote it.
fn read<T>(
    name: &str,
    value: Option<&str>,
    parse: fn(&str) -> Result<T, String>,
) -> PyResult<Option<T>> {
    value
        .map(|v| {
            parse(v).map_err(|e| {
                bad_input(
                    format!("`{name}`: {e}"),
                    "as the CLI's option of that name takes it",
                )
            })
        })
        .transpose()
}

/// [`read`] of a text option the CLI gives a default.
fn read_or<T>(
    name: &str,
    value: Option<&str>,
    default: &str,
    parse: fn(&str) -> Result<T, String>,
) -> PyResult<T> {
    let text = value.unwrap_or(default);
    parse(text).map_err(|e| {
        bad_input(
            format!("`{name}`: {e}"),
            "as the CLI's option of that name takes it",
        )
    })
}

/// A whole number the CLI bounds to `1..=most`.
fn within(name: &str, value: Option<u64>, most: u64) -> PyResult<Option<u64>> {
    match value {
        Some(n) if n == 0 || n > most => Err(bad_input(
            format!("`{name}={n}` is out of range: expected 1 to {most}"),
            "as the CLI's option of that name takes it",
        )),
        v => Ok(v),
    }
}

/// Each of a list within `1..=most`.
fn all_within(name: &str, values: Vec<u64>, most: u64) -> PyResult<Vec<u64>> {
    for (i, v) in values.iter().enumerate() {
        within(&format!("{name}[{i}]"), Some(*v), most)?;
    }
    Ok(values)
}

/// `llmsize design`: every option as its text form or number, read by the engine's parsers
/// (the CLI's); which options go together is checked by the package, in Python's spelling.
#[pyfunction]
#[pyo3(signature = (params, non_embedding, active, memory, train_memory, compute, fit, tolerance, dtype, kv_dtype, ctx, batch, precision, optimizer, checkpointing, lora_rank, qlora, zero, dp, style, like, experts, top_k, vocab, head_dim, kv_heads, gqa_group, ffn_rule, multiple_of, align, tp, pp, aspect, prefer_aspect, hidden_range, layers_range, top, hub_options))]
fn design(
    py: Python<'_>,
    params: Option<&str>,
    non_embedding: bool,
    active: bool,
    memory: Option<&str>,
    train_memory: Option<&str>,
    compute: Option<&str>,
    fit: Option<&str>,
    tolerance: Option<&str>,
    dtype: Option<&str>,
    kv_dtype: Option<&str>,
    ctx: Option<u64>,
    batch: Option<u64>,
    precision: Option<String>,
    optimizer: Option<String>,
    checkpointing: bool,
    lora_rank: Option<u64>,
    qlora: bool,
    zero: Option<u8>,
    dp: Option<u64>,
    style: Option<&str>,
    like: Option<String>,
    experts: Option<u64>,
    top_k: Option<u64>,
    vocab: Option<u64>,
    head_dim: Vec<u64>,
    kv_heads: Vec<u64>,
    gqa_group: Vec<u64>,
    ffn_rule: Option<&str>,
    multiple_of: Option<u64>,
    align: Option<u64>,
    tp: Option<u64>,
    pp: Option<u64>,
    aspect: Option<&str>,
    prefer_aspect: Option<&str>,
    hidden_range: Option<&str>,
    layers_range: Option<&str>,
    top: Option<u64>,
    hub_options: Hub,
) -> PyResult<Answer> {
    use llmsize_engine::design_args as a;
    let dtype = read_or("dtype", dtype, "bf16", a::parse_dtype)?;
    let mut train = DesignTrain {
        dtype: dtype.name().to_owned(),
        checkpointing,
        lora_rank,
        qlora,
        ..DesignTrain::default()
    };
    train.batch = batch.unwrap_or(train.batch);
    train.precision = precision.unwrap_or(train.precision);
    train.optimizer = optimizer.unwrap_or(train.optimizer);
    train.zero = zero.unwrap_or(train.zero);
    train.dp = dp.unwrap_or(train.dp);
    let top = within("top", top, u64::from(a::MAX_TOP))?.unwrap_or(10);
    let options = a::DesignOptions {
        params: read("params", params, a::parse_params)?,
        non_embedding,
        active,
        memory: read("memory", memory, a::parse_memory)?,
        train_memory: read("train_memory", train_memory, a::parse_train_memory)?,
        compute: read("compute", compute, a::parse_flops)?,
        fit: read("fit", fit, a::parse_fit)?.unwrap_or(OptimalRule::Hoffmann),
        tolerance: read_or("tolerance", tolerance, "1%", a::parse_percent)?,
        dtype,
        kv_dtype: read_or("kv_dtype", kv_dtype, "bf16", a::parse_kv_dtype)?,
        ctx,
        train,
        style: read("style", style, a::parse_style)?,
        like,
        experts: within("experts", experts, a::MAX_EXPERTS)?,
        top_k: within("top_k", top_k, a::MAX_EXPERTS)?,
        vocab: within("vocab", vocab, a::MAX_VOCAB)?,
        head_dim: all_within("head_dim", head_dim, a::MAX_HEAD_DIM)?,
        kv_heads: all_within("kv_heads", kv_heads, a::MAX_KV_HEADS)?,
        gqa_group: all_within("gqa_group", gqa_group, a::MAX_KV_HEADS)?,
        ffn_rule: read("ffn_rule", ffn_rule, a::parse_ffn_rule)?,
        multiple_of: within("multiple_of", multiple_of, a::MAX_MULTIPLE)?,
        align: within("align", align, a::MAX_MULTIPLE)?,
        tp: within("tp", tp, a::MAX_DEGREE)?.unwrap_or(1),
        pp: within("pp", pp, a::MAX_DEGREE)?.unwrap_or(1),
        aspect: read("aspect", aspect, a::parse_aspect)?,
        prefer_aspect: read("prefer_aspect", prefer_aspect, a::parse_positive)?,
        hidden_range: read("hidden_range", hidden_range, a::parse_range)?,
        layers_range: read("layers_range", layers_range, a::parse_range)?,
        top: u16::try_from(top).unwrap_or(a::MAX_TOP),
        hub: hub(hub_options)?,
    };
    let request = options.request();
    run(py, move || {
        let outcome = engine().design(&request)?;
        Ok((outcome.to_json()?, outcome.warnings))
    })
}

/// `llmsize inspect`.
#[pyfunction]
#[pyo3(signature = (model, hub_options))]
fn inspect(py: Python<'_>, model: String, hub_options: Hub) -> PyResult<Answer> {
    let request = InspectRequest {
        model,
        hub: hub(hub_options)?,
    };
    run(py, move || {
        Ok((engine().inspect(&request)?.to_json()?, Vec::new()))
    })
}

/// `llmsize audit`.
#[pyfunction]
#[pyo3(signature = (model, hub_options))]
fn audit(py: Python<'_>, model: String, hub_options: Hub) -> PyResult<Answer> {
    let request = AuditRequest {
        model,
        hub: hub(hub_options)?,
    };
    run(py, move || {
        Ok((engine().audit(&request)?.to_json()?, Vec::new()))
    })
}

/// `llmsize presets --json`.
#[pyfunction]
fn presets(py: Python<'_>) -> PyResult<String> {
    run(py, || {
        llmsize_engine::wire::to_pretty(&llmsize_engine::presets()?)
    })
}

/// `llmsize gpus --json`.
#[pyfunction]
fn gpus(py: Python<'_>) -> PyResult<String> {
    run(py, || {
        llmsize_engine::wire::to_pretty(&llmsize_engine::gpus())
    })
}

/// The module.
#[pymodule]
fn _llmsize(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("EngineError", m.py().get_type::<EngineError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(params, m)?)?;
    m.add_function(wrap_pyfunction!(memory, m)?)?;
    m.add_function(wrap_pyfunction!(flops, m)?)?;
    m.add_function(wrap_pyfunction!(train, m)?)?;
    m.add_function(wrap_pyfunction!(design, m)?)?;
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(audit, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(gpus, m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::caught;

    #[test]
    fn a_panic_is_caught_with_its_message() {
        assert_eq!(caught(|| 7), Ok(7));
        assert_eq!(caught(|| -> u8 { panic!("boom") }), Err("boom".to_owned()));
        let n = 3;
        assert_eq!(
            caught(|| -> u8 { panic!("{n} too many") }),
            Err("3 too many".to_owned())
        );
        // What `(t0 - 1)` panics with under `overflow-checks`, the release profile's setting.
        let zero = std::hint::black_box(0_u64);
        #[allow(clippy::arithmetic_side_effects)]
        let overflow = caught(|| zero - 1);
        assert_eq!(
            overflow,
            Err("attempt to subtract with overflow".to_owned())
        );
    }
}
