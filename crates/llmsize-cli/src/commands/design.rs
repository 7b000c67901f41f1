//! `llmsize design`: inverse sizing. Flags → a design request; the outcome → the space
//! searched, the compute-optimal sizes (`--compute`), the candidates and their commands.

use llmsize_core::render::doc::{Cell, Column, Doc, Raw, Table};
use llmsize_core::units::{human_bytes, human_count};
use llmsize_engine::design_args::DesignOptions;
use llmsize_engine::{DesignOutcome, DesignTrain, Quantity};

use super::{Env, Rendered, doc_text, hub};
use crate::Failure;
use crate::cli::{DesignCmdArgs, Format};

/// The flags, read by clap with the engine's parsers, as the engine's options: the one
/// reading `design()` in Python shares.
pub(crate) fn options(args: &DesignCmdArgs) -> DesignOptions {
    DesignOptions {
        params: args.params,
        non_embedding: args.non_embedding,
        active: args.active,
        memory: args.memory,
        train_memory: args.train_memory,
        compute: args.compute,
        fit: args.fit,
        tolerance: args.tolerance,
        dtype: args.dtype,
        kv_dtype: args.kv_dtype,
        ctx: args.ctx,
        train: DesignTrain {
            batch: args.batch,
            dtype: args.dtype.name().to_owned(),
            precision: args.precision.clone(),
            optimizer: args.optimizer.clone(),
            checkpointing: args.checkpointing,
            lora_rank: args.lora_rank,
            qlora: args.qlora,
            zero: args.zero,
            dp: args.dp,
        },
        style: args.style,
        like: args.like.clone(),
        experts: args.experts,
        top_k: args.top_k,
        vocab: args.vocab,
        head_dim: args.head_dim.clone(),
        kv_heads: args.kv_heads.clone(),
        gqa_group: args.gqa_group.clone(),
        ffn_rule: args.ffn_rule,
        multiple_of: args.multiple_of,
        align: args.align,
        tp: args.tp,
        pp: args.pp,
        aspect: args.aspect,
        prefer_aspect: args.prefer_aspect,
        hidden_range: args.hidden_range,
        layers_range: args.layers_range,
        top: args.top,
        hub: hub(&args.hub),
    }
}

pub(crate) fn run(args: &DesignCmdArgs, env: &Env) -> Result<Rendered, Failure> {
    let format = args.out.format();
    if matches!(format, Format::Svg | Format::Mermaid) {
        return Err(super::no_picture("design", format));
    }
    let outcome = env.engine.design(&options(args).request())?;
    let found = !outcome.result.candidates.is_empty();
    let text = if format == Format::Json {
        outcome.to_json()?
    } else {
        doc_text(&doc(&outcome, args), format, env)
    };
    let mut warnings = outcome.warnings.clone();
    if !found && format == Format::Json {
        // The table says it on stdout; JSON readers get it on stderr.
        warnings.push(no_shape_message(&outcome, args.train_memory.is_some()));
    }
    Ok(Rendered::new(text, warnings).status(found))
}

fn no_shape_message(outcome: &DesignOutcome, train: bool) -> String {
    let r = &outcome.result;
    if r.evaluated == 0 {
        format!(
            "no hidden size meets the head width, KV heads and parallelism constraints \
             together; relax {}",
            if r.relax.is_empty() {
                "them".to_owned()
            } else {
                r.relax.join(" or ")
            }
        )
    } else if train {
        // Constraints to relax, and changes of the training step.
        let (step, constraints): (Vec<&String>, Vec<&String>) = r
            .relax
            .iter()
            .partition(|x| x.starts_with("add ") || x.starts_with("shorten "));
        let join = |v: &[&String]| match v {
            [] => String::new(),
            [one] => (*one).clone(),
            [init @ .., last] => format!(
                "{} or {last}",
                init.iter()
                    .map(|x| x.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let mut ways = Vec::new();
        if !constraints.is_empty() {
            ways.push(format!("relax {}", join(&constraints)));
        }
        if !step.is_empty() {
            ways.push(join(&step));
        }
        let smallest = r.extent.map_or(String::new(), |(lo, _)| {
            format!(
                " (by the bound, the smallest step of the space needs about {})",
                human_bytes(u64::try_from(lo.max(0) / 1_000_000).unwrap_or(u64::MAX))
            )
        });
        if ways.is_empty() {
            format!(
                "no shape of the {} evaluated trains within the budget{smallest}, and no \
                 single change tried helps (checkpointing, LoRA r16, QLoRA r16, a quarter of \
                 the sequence): raise the budget or shard with --zero 3 --dp N",
                r.evaluated
            )
        } else {
            format!(
                "no shape of the {} evaluated trains within the budget{smallest}; {} (each \
                 alone gives shapes, measured)",
                r.evaluated,
                ways.join("; or ")
            )
        }
    } else if r.relax.is_empty() {
        let span = match (r.extent, r.target) {
            (Some((lo, hi)), Some(_)) => format!(
                " (the space spans {} to {} parameters)",
                human_count(u64::try_from(lo).unwrap_or(0)),
                human_count(u64::try_from(hi).unwrap_or(u64::MAX))
            ),
            _ => String::new(),
        };
        format!(
            "no shape of the {} evaluated meets the target{span}, and no single constraint's \
             removal helps",
            r.evaluated
        )
    } else {
        format!(
            "no shape of the {} evaluated meets the target; relax {} (each alone gives shapes)",
            r.evaluated,
            r.relax.join(" or ")
        )
    }
}

#[expect(
    clippy::cast_precision_loss,
    reason = "percentages and GFLOPs to print"
)]
fn doc(outcome: &DesignOutcome, args: &DesignCmdArgs) -> Doc {
    let r = &outcome.result;
    let mut doc = Doc::new();
    let ctx = options(args).ctx();
    let target = match (args.params, args.memory, r.target) {
        (Some(_), _, Some((n, q))) => format!(
            "{} {} parameters",
            human_count(n),
            match q {
                Quantity::Total => "total",
                Quantity::NonEmbedding => "non-embedding",
                Quantity::Active => "active",
            }
        ),
        (_, Some(m), _) => format!(
            "the largest that fits {} ({}, {} tokens of KV cache)",
            human_bytes(m),
            args.dtype.name(),
            ctx
        ),
        (_, _, Some((n, _))) if args.compute.is_some() => {
            format!("{} parameters (compute-optimal)", human_count(n))
        }
        (_, _, Some((n, _))) => format!("{} total parameters (its own size)", human_count(n)),
        (_, _, None) if args.train_memory.is_some() => format!(
            "the largest whose training step fits {} per GPU ({ctx} tokens × {})",
            human_bytes(args.train_memory.unwrap_or(0)),
            args.batch
        ),
        _ => String::new(),
    };
    doc.title(format!("Design: {} shapes, {target}", r.base));
    if let Some(optima) = &r.optima {
        let mut t = Table::new(
            "compute_optimal",
            vec![
                Column::left("rule"),
                Column::right("params N"),
                Column::right("tokens D"),
                Column::right("D/N"),
                Column::right("loss"),
            ],
        );
        for o in optima {
            t.push(vec![
                Cell::text(o.name),
                Cell::with_raw(sci(o.params), Raw::Float(o.params)),
                Cell::with_raw(sci(o.tokens), Raw::Float(o.tokens)),
                Cell::with_raw(
                    format!("{:.1}", o.tokens / o.params),
                    Raw::Float(o.tokens / o.params),
                ),
                Cell::with_raw(format!("{:.3}", o.loss), Raw::Float(o.loss)),
            ]);
        }
        doc.heading(format!(
            "Compute-optimal for C = {} FLOPs (C = 6·N·D; L = E + A/N^α + B/D^β)",
            sci(args.compute.unwrap_or(0.0))
        ))
        .table(t)
        .line(
            "Hoffmann et al. 2022 approach 3: E 1.69, A 406.4, B 410.7, α 0.34, β 0.28; \
             Besiroglu et al. 2024 (Epoch AI replication): E 1.8172, A 482.01, B 2085.43, \
             α 0.3478, β 0.3658; 20-tokens row's loss by Epoch's fit",
        )
        .blank();
    }
    let mut space = Table::new(
        "space",
        vec![Column::left("dimension"), Column::fold("values")],
    );
    for (k, v) in &r.space {
        space.push(vec![Cell::text(k), Cell::text(v)]);
    }
    space.push(vec![
        Cell::text("evaluated"),
        Cell::with_raw(
            format!(
                "{} shapes ({} met the target)",
                thousands(r.evaluated),
                thousands(r.matched)
            ),
            Raw::Int(i128::from(r.evaluated)),
        ),
    ]);
    doc.heading("Space searched (exhaustively)")
        .table(space)
        .line(format!(
            "total = {}, measured on the reader (w = kv·hd, h = hd, n = heads, k = kv); every \
             candidate below re-counted by it",
            r.forms.total.describe()
        ))
        .blank();
    if r.candidates.is_empty() {
        doc.line(no_shape_message(outcome, args.train_memory.is_some()));
        return doc;
    }
    let target = r.target.map(|t| t.0);
    // A training step holds no KV cache: its table leaves the column out (80 columns).
    let training = args.train_memory.is_some();
    let mut columns = vec![
        Column::right("#"),
        Column::right("d"),
        Column::right("L"),
        Column::right("heads"),
        Column::right("kv"),
        Column::right("hd"),
        Column::right("ffn"),
        Column::right("total"),
        match (target, args.train_memory) {
            (Some(_), _) => Column::right("Δ"),
            (None, Some(_)) => Column::right("train/GPU").csv("train_bytes_per_gpu"),
            (None, None) => Column::right("memory"),
        },
        Column::right("KV/tok").csv("kv_bytes_per_token"),
        Column::right("GF/tok").csv("gflops_per_token"),
    ];
    if training {
        columns.remove(KV_COLUMN);
    }
    let mut t = Table::new("candidates", columns);
    for (i, c) in r.candidates.iter().enumerate() {
        let s = &c.shape;
        let value = match target.map(|_| r.target.map_or(Quantity::Total, |t| t.1)) {
            Some(Quantity::Active) => c.active,
            Some(Quantity::NonEmbedding) => c.non_embedding,
            _ => c.total,
        };
        let delta = match (target, c.memory_bytes) {
            (None, _) if c.train_bytes_per_gpu.is_some() => {
                let b = c.train_bytes_per_gpu.unwrap_or(0);
                Cell::with_raw(
                    human_bytes(u64::try_from(b).unwrap_or(u64::MAX)),
                    Raw::Int(i128::try_from(b).unwrap_or(i128::MAX)),
                )
            }
            (Some(n), _) => {
                // CSV gets the fraction, as every share and relative error does.
                let d = (value as f64 - n as f64) / n as f64;
                Cell::with_raw(format!("{:+.2}%", d * 100.0), Raw::Float(d))
            }
            (None, Some(m)) => Cell::with_raw(human_bytes(m), Raw::Int(i128::from(m))),
            (None, None) => Cell::empty(),
        };
        let mut row = vec![
            Cell::count((i + 1) as u64),
            Cell::with_raw(s.hidden.to_string(), Raw::Int(i128::from(s.hidden))),
            Cell::with_raw(s.layers.to_string(), Raw::Int(i128::from(s.layers))),
            Cell::with_raw(s.heads.to_string(), Raw::Int(i128::from(s.heads))),
            Cell::with_raw(s.kv_heads.to_string(), Raw::Int(i128::from(s.kv_heads))),
            Cell::with_raw(s.head_dim.to_string(), Raw::Int(i128::from(s.head_dim))),
            Cell::with_raw(s.ffn.to_string(), Raw::Int(i128::from(s.ffn))),
            Cell::count(c.total),
            delta,
            Cell::with_raw(
                human_bytes(c.kv_bytes_per_token),
                Raw::Int(i128::from(c.kv_bytes_per_token)),
            ),
            Cell::with_raw(
                format!("{:.2}", c.flops_per_token as f64 / 1e9),
                Raw::Float(c.flops_per_token as f64 / 1e9),
            ),
        ];
        if training {
            row.remove(KV_COLUMN);
        }
        t.push(row);
    }
    doc.heading("Candidates").table(t).line(if training {
        format!(
            "train/GPU: one training step's peak on the most loaded GPU (`llmsize train`); \
             GF/tok: forward GFLOPs of one token at {ctx} tokens of context"
        )
    } else {
        format!(
            "KV/tok: KV cache per token, bf16; GF/tok: forward GFLOPs of one token at {ctx} \
             tokens of context"
        )
    });
    doc.line(format!(
        "Ranked by {}. Why aspect only breaks ties: Kaplan et al. 2020 find the loss depends \
         weakly on shape over a wide range of d/L; Levine et al. 2020 show depth pays only up \
         to a width-dependent limit, so neither extreme is kept.",
        r.rank_rule
    ))
    .blank();
    let mut cmds = Table::new(
        "commands",
        vec![Column::right("#"), Column::fold("command")],
    );
    for (i, c) in r.candidates.iter().enumerate() {
        cmds.push(vec![Cell::count((i + 1) as u64), Cell::text(&c.command)]);
    }
    doc.heading("Each counted exactly by").table(cmds);
    if args.train_memory.is_some() {
        let mut train = Table::new(
            "train_commands",
            vec![Column::right("#"), Column::fold("command")],
        );
        for (i, c) in r.candidates.iter().enumerate() {
            train.push(vec![
                Cell::count((i + 1) as u64),
                Cell::text(c.train_command.as_deref().unwrap_or("")),
            ]);
        }
        doc.blank()
            .heading("Each training step measured exactly by")
            .table(train);
    }
    doc
}

/// The candidates table's KV-cache column.
const KV_COLUMN: usize = 9;

/// `5.88e23`.
fn sci(x: f64) -> String {
    format!("{x:.3e}").replace('e', "e+").replace("e+-", "e-")
}

fn thousands(n: u64) -> String {
    llmsize_core::units::thousands(n)
}
