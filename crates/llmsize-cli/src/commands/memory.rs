//! `llmsize memory`: can I run it?

use anyhow::Context as _;
use llmsize_adapters::ReadOptions;
use llmsize_core::ModelSpec;
use llmsize_core::formats::{KvDtype, WeightFormat};
use llmsize_core::gpu;
use llmsize_core::memory::{
    CachePolicy, MemoryOptions, MlaCache, StorageLine, max_context, memory_with,
};
use llmsize_core::render;

use crate::Outcome;
use crate::cli::{MemoryArgs, MlaArg, ModelArgs, WindowArg, parse_size};
use crate::output;
use crate::resolve::{Lookup, Model, Want, resolve_model, with_hint};

/// Read the one MODEL of `memory`/`flops`, with its weight files when `want` asks.
pub(crate) fn read_model(args: &ModelArgs, want: Want) -> anyhow::Result<(ModelSpec, Model)> {
    let model = resolve_model(
        &args.model,
        &Lookup {
            online: args.hub.online,
            revision: args.hub.revision.clone(),
            weights: want,
        },
    )?;
    let options = ReadOptions {
        overrides: args.set.clone(),
        ..ReadOptions::default()
    };
    let spec = model.spec(&options)?;
    for w in &spec.warnings {
        output::warn(&format!("{}: {w}", spec.name));
    }
    Ok((spec, model))
}

pub(crate) fn weight_format(name: &str) -> anyhow::Result<WeightFormat> {
    WeightFormat::parse(name).ok_or_else(|| {
        with_hint(
            format!("unknown weight format `{name}` for `--dtype`"),
            format!("valid: {}", WeightFormat::names().join(", ")),
        )
    })
}

pub(crate) fn kv_dtype(name: &str) -> anyhow::Result<KvDtype> {
    KvDtype::parse(name).ok_or_else(|| {
        with_hint(
            format!("unknown KV cache type `{name}` for `--kv-dtype`"),
            format!("valid: {}", KvDtype::NAMES.join(", ")),
        )
    })
}

pub(crate) fn gpu_spec(spec: Option<&str>) -> anyhow::Result<Option<(&'static gpu::Gpu, u64)>> {
    spec.map(|s| {
        gpu::parse_spec(s).map_err(|e| {
            with_hint(
                format!("`--gpu {s}`: {e}"),
                "`llmsize gpus` lists them with their memory".into(),
            )
        })
    })
    .transpose()
}

/// Arguments → options, validated in one place.
pub(crate) fn options(args: &MemoryArgs) -> anyhow::Result<MemoryOptions> {
    let gpu = gpu_spec(args.gpu.as_deref())?;
    let count = gpu.map_or(1, |(_, n)| n);
    let tp = args.tp.unwrap_or(count);
    if gpu.is_some() && tp > count {
        return Err(with_hint(
            format!("`--tp {tp}` is more than the {count} GPU(s) of `--gpu`"),
            "name as many GPUs as the tensor-parallel degree, e.g. `--gpu h100x8`".into(),
        ));
    }
    Ok(MemoryOptions {
        format: weight_format(args.dtype.as_deref().unwrap_or("bf16"))?,
        seq_len: args.seq_len,
        batch: args.batch,
        kv_dtype: kv_dtype(&args.kv_dtype)?,
        tp,
        gpu,
        mla: match args.mla_cache {
            MlaArg::Latent => MlaCache::Latent,
            MlaArg::Expanded => MlaCache::Expanded,
        },
        window: match args.cache {
            WindowArg::Transformers => CachePolicy::Transformers,
            WindowArg::Runtime => CachePolicy::Runtime,
        },
        overhead_bytes: args
            .overhead
            .checked_mul(1 << 20)
            .context("`--overhead` is too large")?,
    })
}

/// `seq=1k,8k` or `batch=1,8` → the axis and its values.
fn parse_sweep(s: &str) -> anyhow::Result<(&'static str, Vec<u64>)> {
    let bad = || {
        with_hint(
            format!("`--sweep {s}` is not understood"),
            "use `seq=1k,8k,32k,128k` or `batch=1,8,32`".into(),
        )
    };
    let (axis, values) = s.split_once('=').ok_or_else(bad)?;
    let axis = match axis.trim() {
        "seq" | "seq-len" | "seq_len" | "context" => "seq_len",
        "batch" => "batch",
        _ => return Err(bad()),
    };
    let values = values
        .split(',')
        .map(|v| {
            parse_size(v).map_err(|e| {
                with_hint(
                    format!("`--sweep {s}`: {e}"),
                    "values are positive sizes such as 8k".into(),
                )
            })
        })
        .collect::<anyhow::Result<Vec<u64>>>()?;
    Ok((axis, values))
}

pub(crate) fn run(args: &MemoryArgs) -> anyhow::Result<Outcome> {
    let (spec, model) = read_model(&args.model, Want::IfPresent)?;
    let options = options(args)?;
    // Weight files, when the model has them, are measured rather than estimated.
    let from_files: Option<Vec<StorageLine>> = match model.weights.as_ref() {
        None => None,
        Some(w) => Some(
            w.checkpoint()
                .summary()
                .map_err(|e| anyhow::anyhow!("{}: {e}", spec.name))?
                .by_dtype
                .into_iter()
                .map(|(storage, (params, bytes))| StorageLine {
                    storage,
                    params,
                    bytes,
                })
                .collect(),
        ),
    };
    let files = from_files.as_deref();
    if files.is_some() && args.dtype.is_some() {
        output::warn("`--dtype` is ignored: the weights are measured from the files as stored");
    }
    let wrap = |e: llmsize_core::SpecError| anyhow::anyhow!("{}: {e}", spec.name);
    if let Some(sweep) = &args.sweep {
        let (axis, values) = parse_sweep(sweep)?;
        let mut points = Vec::new();
        for v in values {
            let o = if axis == "batch" {
                MemoryOptions {
                    batch: v,
                    ..options
                }
            } else {
                MemoryOptions {
                    seq_len: v,
                    ..options
                }
            };
            points.push((v, memory_with(&spec, &o, files).map_err(wrap)?));
        }
        let text = if args.json {
            let list: Vec<_> = points
                .iter()
                .map(|(v, r)| {
                    let mut j = render::memory::value(&spec.name, r, None);
                    j["swept"] = serde_json::json!({ axis: v });
                    j
                })
                .collect();
            serde_json::to_string_pretty(&list)? + "\n"
        } else {
            render::memory::render_sweep(&spec.name, axis, &points)
        };
        output::print(&text)?;
        return Ok(if points.iter().all(|(_, r)| r.fits != Some(false)) {
            Outcome::Success
        } else {
            Outcome::No
        });
    }
    let report = memory_with(&spec, &options, files).map_err(wrap)?;
    let longest = if args.max_context {
        Some(max_context(&spec, &options, files, 1 << 24).map_err(wrap)?)
    } else {
        None
    };
    let text = if args.json {
        serde_json::to_string_pretty(&render::memory::value(&spec.name, &report, longest))? + "\n"
    } else {
        render::memory::render(&spec.name, &report, longest, args.explain)
    };
    output::print(&text)?;
    Ok(if report.fits == Some(false) {
        Outcome::No
    } else {
        Outcome::Success
    })
}
