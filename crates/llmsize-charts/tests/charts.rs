//! The charts of real reports: valid XML, the same bytes twice, the exact numbers of the
//! report read back from the SVG's text, and bounded on hostile input.
//!
//! Set `LLMSIZE_CHARTS_OUT=DIR` to keep every chart drawn here as a file (to look at it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_precision_loss,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

use llmsize_charts::{ChartError, MAX_POINTS, MAX_SERIES, flops_svg, memory_svg, params_svg};
use llmsize_core::report::ParamsReport;
use llmsize_engine::{
    Engine, FlopsOutcome, FlopsRequest, HubEnv, MemoryOutcome, MemoryRequest, MemoryResult,
    ParamsRequest, Sweep,
};

fn engine() -> Engine {
    Engine::new(HubEnv::default())
}

fn keep(name: &str, text: &str) {
    if let Some(dir) = std::env::var_os("LLMSIZE_CHARTS_OUT") {
        std::fs::write(std::path::Path::new(&dir).join(name), text).unwrap();
    }
}

fn params(models: &[&str]) -> Vec<ParamsReport> {
    engine()
        .params(&ParamsRequest::models(models.iter().copied()))
        .unwrap()
        .reports
}

fn memory(models: &[&str], gpu: Option<&str>, sweep: Option<&str>) -> MemoryOutcome {
    let mut req = MemoryRequest::new(models[0]);
    req.models = models.iter().map(|m| (*m).to_owned()).collect();
    req.gpu = gpu.map(str::to_owned);
    req.sweep = sweep.map(|s| Sweep::parse(s).unwrap());
    engine().memory(&req).unwrap()
}

fn flops(models: &[&str], sweep: Option<&str>) -> FlopsOutcome {
    let mut req = FlopsRequest::new(models[0]);
    req.models = models.iter().map(|m| (*m).to_owned()).collect();
    req.sweep = sweep.map(|s| Sweep::parse(s).unwrap());
    engine().flops(&req).unwrap()
}

/// One `<text>`: where it is and what it says.
#[derive(Debug, Clone)]
struct Text {
    x: i64,
    y: i64,
    s: String,
}

/// Parses the SVG as XML (failing the test if it is not), checks it is an `<svg>` with a
/// `<title>`, and returns its texts.
fn texts(svg: &str) -> Vec<Text> {
    let doc = roxmltree::Document::parse(svg).expect("the chart is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert!(
        root.children().any(|n| n.has_tag_name("title")),
        "the chart has a <title>"
    );
    root.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| Text {
            x: n.attribute("x").unwrap().parse().unwrap(),
            y: n.attribute("y").unwrap().parse().unwrap(),
            s: n.text().unwrap_or("").trim().to_owned(),
        })
        .collect()
}

/// The texts on one line (within 4 px of each other vertically), left to right, lines from
/// the top.
fn lines(svg: &str) -> Vec<Vec<String>> {
    let mut t = texts(svg);
    t.sort_by_key(|t| (t.y, t.x));
    let mut out: Vec<(i64, Vec<Text>)> = Vec::new();
    for x in t {
        match out.last_mut() {
            Some((y, row)) if x.y - *y <= 4 => row.push(x),
            _ => out.push((x.y, vec![x])),
        }
    }
    out.into_iter()
        .map(|(_, mut row)| {
            row.sort_by_key(|t| t.x);
            row.into_iter().map(|t| t.s).collect()
        })
        .collect()
}

/// `13,476,831,232` → 13476831232; `None` for anything else.
fn number(s: &str) -> Option<u128> {
    if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit() || c == ',') {
        return None;
    }
    s.replace(',', "").parse().ok()
}

/// The exact numbers after `label` on the one line that starts with it.
fn row(svg: &str, label: &str) -> Vec<u128> {
    numbers_after(lines(svg), label)
}

fn numbers_after(lines: Vec<Vec<String>>, label: &str) -> Vec<u128> {
    let found: Vec<Vec<String>> = lines
        .into_iter()
        .filter(|l| l.first().is_some_and(|s| s == label))
        .collect();
    assert_eq!(found.len(), 1, "one line labelled {label}: {found:?}");
    found[0].iter().skip(1).filter_map(|s| number(s)).collect()
}

/// [`row`] in the table under a sweep's chart: the lines after its header (`seq_len`, …),
/// not the axis's tick labels.
fn table_row(svg: &str, label: &str) -> Vec<u128> {
    let all = lines(svg);
    let head = all
        .iter()
        .position(|l| l.len() > 1 && l.first().is_some_and(|s| s == "seq_len"))
        .expect("a table headed seq_len");
    numbers_after(all[head..].to_vec(), label)
}

/// Draws twice: the same bytes.
fn stable(draw: impl Fn() -> String) -> String {
    let a = draw();
    assert_eq!(a, draw(), "the same input gives the same bytes");
    a
}

#[test]
fn params_of_one_model_carry_every_component_and_the_total() {
    for name in ["gpt2", "llama-2-7b", "Mixtral-8x7B-v0.1"] {
        let reports = params(&[name]);
        let r = &reports[0];
        let svg = stable(|| params_svg(&reports).unwrap());
        keep(&format!("params-{name}.svg"), &svg);
        let c = &r.count;
        for comp in c.components.iter().filter(|x| x.count > 0) {
            assert_eq!(
                row(&svg, comp.category.as_str()),
                vec![u128::from(comp.count)],
                "{name} {}",
                comp.category
            );
        }
        // The total, exact, in the line under the title.
        let total = llmsize_core::units::thousands(c.total);
        assert!(
            texts(&svg)
                .iter()
                .any(|t| t.s.starts_with(&format!("{total} parameters in total"))),
            "{name}: total {total}"
        );
        let title = &texts(&svg)[0].s;
        assert!(
            title.starts_with(&format!("{}: where the", r.name)),
            "{title}"
        );
    }
    // The exact totals of the brief, so the readback is against known numbers too.
    let svg = params_svg(&params(&["gpt2"])).unwrap();
    assert_eq!(row(&svg, "ffn"), vec![56_669_184]);
    // GPT-2's head is tied: a zero bar that says so.
    let tied = lines(&svg)
        .into_iter()
        .find(|l| l.first().is_some_and(|s| s == "lm_head"))
        .unwrap();
    assert_eq!(tied, ["lm_head", "0", "tied to token_embedding"]);
}

/// The coloured (not white) `<rect>`s: `(x, y, width, height)`.
fn bars(svg: &str) -> Vec<(i64, i64, i64, i64)> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") != Some("#FFFFFF"))
        .map(|n| {
            let a = |k: &str| n.attribute(k).unwrap().parse::<i64>().unwrap();
            (a("x"), a("y"), a("width"), a("height"))
        })
        .collect()
}

#[test]
fn bar_lengths_are_proportional_to_the_numbers() {
    // gpt2's components, top to bottom: each bar's length is its count over the longest
    // (ffn's), within the pixel the drawing rounds to.
    let reports = params(&["gpt2"]);
    let svg = params_svg(&reports).unwrap();
    let mut counts: Vec<u64> = reports[0]
        .count
        .components
        .iter()
        .map(|c| c.count)
        .filter(|n| *n > 0)
        .collect();
    // The tied head's row: a bar of 0.
    counts.push(0);
    let mut b = bars(&svg);
    b.sort_by_key(|r| r.1);
    let widths: Vec<i64> = b.iter().map(|r| r.2).collect();
    assert_eq!(widths.len(), counts.len(), "one bar per component: {b:?}");
    let (wmax, cmax) = (*widths.iter().max().unwrap(), *counts.iter().max().unwrap());
    for (w, c) in widths.iter().zip(&counts) {
        let want = *c as f64 / cmax as f64 * wmax as f64;
        assert!(
            (*w as f64 - want).abs() <= 1.5,
            "width {w}, want {want:.1} for {c}"
        );
    }
    // The memory stack: each segment's height over the weights', as bytes over bytes.
    let out = memory(&["llama-2-7b"], Some("rtx4090"), None);
    let MemoryResult::Single { report: r, .. } = &out.models[0].result else {
        panic!("one point")
    };
    let svg = memory_svg(&out).unwrap();
    // The bar's segments share its x; the table's swatches sit at x = 16.
    let segs: Vec<(i64, i64, i64, i64)> = bars(&svg).into_iter().filter(|b| b.0 > 16).collect();
    let want = [
        r.weights_per_gpu,
        r.kv_per_gpu,
        r.activation_bytes,
        r.options.overhead_bytes,
    ];
    assert_eq!(segs.len(), want.len(), "{segs:?}");
    let h0 = segs[0].3 as f64;
    for (s, bytes) in segs.iter().zip(want) {
        let expect = bytes as f64 / want[0] as f64 * h0;
        assert!(
            (s.3 as f64 - expect).abs() <= 1.5,
            "height {}, want {expect:.1}",
            s.3
        );
    }
}

#[test]
fn params_side_by_side_carry_every_model_in_every_component() {
    let names = ["gpt2", "llama-2-7b", "Mixtral-8x7B-v0.1"];
    let reports = params(&names);
    let svg = stable(|| params_svg(&reports).unwrap());
    keep("params-three.svg", &svg);
    // Every number line is `count model`; in order: component by component, model by model.
    let got: Vec<(u128, String)> = lines(&svg)
        .into_iter()
        .filter_map(|l| match l.as_slice() {
            [.., n, model] if names.len() == 3 && reports.iter().any(|r| &r.name == model) => {
                number(n).map(|n| (n, model.clone()))
            }
            _ => None,
        })
        .collect();
    let mut want = Vec::new();
    for cat in llmsize_core::count::Category::ALL {
        if reports.iter().any(|r| r.count.get(cat) > 0) {
            for r in &reports {
                want.push((u128::from(r.count.get(cat)), r.name.clone()));
            }
        }
    }
    assert_eq!(got, want);
    for (r, total) in reports
        .iter()
        .zip([124_439_808u64, 6_738_415_616, 46_702_792_704])
    {
        assert_eq!(r.count.total, total);
        let line = format!(
            "{}: {} parameters",
            r.name,
            llmsize_core::units::thousands(total)
        );
        assert!(texts(&svg).iter().any(|t| t.s.starts_with(&line)), "{line}");
    }
}

#[test]
fn memory_on_a_gpu_carries_every_segment_and_the_capacity() {
    let out = memory(&["llama-2-7b"], Some("rtx4090"), None);
    let MemoryResult::Single { report: r, .. } = &out.models[0].result else {
        panic!("one point")
    };
    let svg = stable(|| memory_svg(&out).unwrap());
    keep("memory-llama-2-7b-rtx4090.svg", &svg);
    assert_eq!(row(&svg, "weights"), [u128::from(r.weights_per_gpu)]);
    assert_eq!(row(&svg, "KV cache"), [u128::from(r.kv_per_gpu)]);
    assert_eq!(row(&svg, "activations"), [u128::from(r.activation_bytes)]);
    assert_eq!(
        row(&svg, "runtime overhead"),
        [u128::from(r.options.overhead_bytes)]
    );
    assert_eq!(row(&svg, "total per GPU"), [u128::from(r.per_gpu)]);
    // The RTX 4090's 24 GiB as the table prints it: 25,757,220,864 bytes.
    assert_eq!(row(&svg, "GPU memory"), [25_757_220_864]);
    // Known values (bf16, 4,096 tokens): 6,738,415,616 parameters × 2 bytes; the KV cache
    // 2·32 heads·128·32 layers·4,096 tokens·2 bytes = 2 GiB; the segments add to the total.
    assert_eq!(r.weights_per_gpu, 13_476_831_232);
    assert_eq!(r.kv_per_gpu, 2_147_483_648);
    assert_eq!(
        r.weights_per_gpu + r.kv_per_gpu + r.activation_bytes + r.options.overhead_bytes,
        r.per_gpu
    );
    assert!(svg.contains("<title>Llama-2-7b-hf: memory to serve on 1 × RTX-4090-24GB</title>"));
}

#[test]
fn memory_of_several_models_has_one_column_each() {
    let out = memory(
        &["gpt2", "llama-2-7b", "Mixtral-8x7B-v0.1"],
        Some("h100"),
        None,
    );
    let svg = stable(|| memory_svg(&out).unwrap());
    keep("memory-three-h100.svg", &svg);
    let per_gpu: Vec<u128> = out
        .models
        .iter()
        .map(|m| match &m.result {
            MemoryResult::Single { report, .. } => u128::from(report.per_gpu),
            MemoryResult::Sweep { .. } => panic!("one point"),
        })
        .collect();
    assert_eq!(row(&svg, "total per GPU"), per_gpu);
    assert_eq!(row(&svg, "GPU memory"), [85_520_809_984; 3]);
}

#[test]
fn memory_under_tensor_parallelism_is_per_gpu() {
    let out = memory(&["Mixtral-8x7B-v0.1"], Some("h100x2"), None);
    let MemoryResult::Single { report: r, .. } = &out.models[0].result else {
        panic!("one point")
    };
    let svg = stable(|| memory_svg(&out).unwrap());
    keep("memory-mixtral-h100x2.svg", &svg);
    assert_eq!(r.options.tp, 2);
    // Half of the bf16 weights on each GPU: 46,702,792,704 · 2 / 2.
    assert_eq!(row(&svg, "weights"), [46_702_792_704]);
    assert_eq!(row(&svg, "total per GPU"), [u128::from(r.per_gpu)]);
}

#[test]
fn a_seq_sweep_carries_every_point() {
    let out = memory(
        &["llama-2-7b"],
        Some("rtx4090"),
        Some("seq=1k,2k,4k,8k,16k,32k"),
    );
    let MemoryResult::Sweep { points, .. } = &out.models[0].result else {
        panic!("a sweep")
    };
    let svg = stable(|| memory_svg(&out).unwrap());
    keep("memory-llama-2-7b-seq.svg", &svg);
    for (v, r) in points {
        assert_eq!(
            table_row(&svg, &v.label()),
            [u128::from(r.per_gpu), u128::from(r.kv_per_gpu)],
            "seq_len {}",
            v.label()
        );
    }
    // The KV cache doubles with the context: 1k tokens hold 512 MiB, 32k hold 16 GiB.
    assert_eq!(table_row(&svg, "1,024")[1], 536_870_912);
    assert_eq!(table_row(&svg, "32,768")[1], 17_179_869_184);
}

#[test]
fn flops_carry_every_component() {
    for name in ["gpt2", "llama-2-7b", "Mixtral-8x7B-v0.1"] {
        let out = flops(&[name], None);
        let svg = stable(|| flops_svg(&out).unwrap());
        keep(&format!("flops-{name}.svg"), &svg);
        let r = &out.points[0].report;
        for l in r.forward.iter().filter(|l| l.flops > 0) {
            assert_eq!(row(&svg, l.key), [l.flops], "{name} {}", l.key);
        }
        let total = llmsize_core::units::thousands_u128(r.forward_flops);
        assert!(
            texts(&svg)
                .iter()
                .any(|t| t.s.starts_with(&format!("forward {total} FLOPs"))),
            "{name}: {total}"
        );
    }
}

#[test]
fn flops_side_by_side_carry_every_model() {
    let out = flops(&["gpt2", "llama-2-7b", "Mixtral-8x7B-v0.1"], None);
    let svg = stable(|| flops_svg(&out).unwrap());
    keep("flops-three.svg", &svg);
    // Each model's forward total, with its own context (gpt2's is capped at its 1,024
    // positions).
    for p in &out.points {
        let line = format!(
            "{} ({} tokens × batch 1): forward {} FLOPs",
            p.name,
            llmsize_core::units::thousands(p.report.seq_len),
            llmsize_core::units::thousands_u128(p.report.forward_flops)
        );
        assert!(texts(&svg).iter().any(|t| t.s.starts_with(&line)), "{line}");
    }
    // `ffn` labels the middle of its three bars: the line above, its own, the line below.
    let ffn: Vec<u128> = out
        .points
        .iter()
        .map(|p| {
            p.report
                .forward
                .iter()
                .find(|l| l.key == "ffn")
                .map_or(0, |l| l.flops)
        })
        .collect();
    let all = lines(&svg);
    let start = all
        .iter()
        .position(|l| l.first().is_some_and(|s| s == "ffn"))
        .unwrap();
    let got: Vec<u128> = all[start - 1..start + 2]
        .iter()
        .filter_map(|l| l.iter().find_map(|s| number(s)))
        .collect();
    assert_eq!(got, ffn);
}

#[test]
fn a_flops_sweep_carries_every_point() {
    let out = flops(&["llama-2-7b", "Mixtral-8x7B-v0.1"], Some("seq=1k,4k,16k"));
    let svg = stable(|| flops_svg(&out).unwrap());
    keep("flops-seq.svg", &svg);
    for seq in ["1,024", "4,096", "16,384"] {
        let want: Vec<u128> = out
            .points
            .iter()
            .filter(|p| p.swept.as_ref().is_some_and(|v| v.label() == seq))
            .map(|p| p.report.forward_flops)
            .collect();
        assert_eq!(want.len(), 2);
        assert_eq!(table_row(&svg, seq), want, "seq_len {seq}");
    }
}

#[test]
fn categorical_sweeps_draw_a_bar_per_value() {
    let out = memory(
        &["llama-2-7b"],
        Some("rtx4090"),
        Some("dtype=bf16,q8_0,q4_k_m"),
    );
    let svg = stable(|| memory_svg(&out).unwrap());
    keep("memory-llama-2-7b-dtype.svg", &svg);
    let MemoryResult::Sweep { points, .. } = &out.models[0].result else {
        panic!("a sweep")
    };
    let want: Vec<u128> = points
        .iter()
        .map(|(_, r)| u128::from(r.weights_per_gpu))
        .collect();
    assert_eq!(row(&svg, "weights"), want);
    let svg = stable(|| memory_svg(&memory(&["gpt2"], None, Some("gpu=rtx4090,h100"))).unwrap());
    // Two GPUs, two capacities: one per bar.
    assert_eq!(row(&svg, "GPU memory"), [25_757_220_864, 85_520_809_984]);
}

#[test]
fn mermaid_flow_adds_up_to_the_total() {
    for name in ["gpt2", "llama-2-7b", "Mixtral-8x7B-v0.1", "t5-small"] {
        let r = &params(&[name])[0];
        let text = llmsize_charts::params_mermaid(r);
        assert_eq!(text, llmsize_charts::params_mermaid(r));
        keep(&format!("{name}.mmd"), &text);
        assert!(text.starts_with("flowchart TD\n"));
        // Inputs and the rest: their counts; each layer kind: its `each` times its layers.
        let mut sum: u128 = 0;
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with("subgraph") {
                let (_, label) = line.split_once("[\"").unwrap();
                let (layers, _) = label.split_once(" × ").unwrap();
                let layers: u128 = layers.parse().unwrap();
                let each = line
                    .rsplit_once(": ")
                    .unwrap()
                    .1
                    .split_once(" each")
                    .unwrap()
                    .0;
                sum += layers * number(each).unwrap();
            } else if (line.starts_with("in_") || line.starts_with("out_")) && line.contains("[\"")
            {
                let n = line.split("<br/>").nth(1).unwrap();
                let n = n.split([' ', '"']).next().unwrap();
                sum += number(n).unwrap();
            }
        }
        assert_eq!(sum, u128::from(r.count.total), "{name}");
        assert!(text.contains(&format!(
            "total<br/>{}",
            llmsize_core::units::thousands(r.count.total)
        )));
        // Every subgraph is closed, every node id is declared once.
        assert_eq!(
            text.matches("subgraph ").count(),
            text.lines().filter(|l| l.trim() == "end").count()
        );
    }
}

#[test]
fn hostile_names_stay_inside_their_text() {
    let mut reports = params(&["gpt2"]);
    reports[0].name = format!("<script>&\"'\u{7}{}", "x".repeat(10_000));
    let svg = params_svg(&reports).unwrap();
    keep("params-hostile.svg", &svg);
    texts(&svg);
    assert!(!svg.contains("<script>"));
    assert!(
        svg.len() < 100_000,
        "a long name is cut: {} bytes",
        svg.len()
    );
    let mermaid = llmsize_charts::params_mermaid(&reports[0]);
    keep("hostile.mmd", &mermaid);
    assert!(!mermaid.contains("<script>"));
    assert!(!mermaid.contains('\u{7}'));
}

#[test]
fn the_largest_numbers_draw() {
    // A report can hold no more than u64::MAX in all (its total is a checked sum).
    let mut reports = params(&["gpt2"]);
    for c in &mut reports[0].count.components {
        c.count = if c.category == llmsize_core::count::Category::Attention {
            u64::MAX
        } else {
            0
        };
    }
    reports[0].count.total = u64::MAX;
    let svg = params_svg(&reports).unwrap();
    assert_eq!(row(&svg, "attention"), [u128::from(u64::MAX)]);

    let mut out = memory(&["llama-2-7b"], Some("rtx4090"), None);
    if let MemoryResult::Single { report, .. } = &mut out.models[0].result {
        report.weights_per_gpu = u64::MAX;
        report.kv_per_gpu = u64::MAX;
        report.per_gpu = u64::MAX;
    }
    let svg = memory_svg(&out).unwrap();
    keep("memory-u64-max.svg", &svg);
    assert_eq!(row(&svg, "weights"), [u128::from(u64::MAX)]);

    let mut out = flops(&["gpt2"], None);
    for l in &mut out.points[0].report.forward {
        l.flops = if l.key == "ffn" { u128::MAX } else { 0 };
    }
    out.points[0].report.forward_flops = u128::MAX;
    let svg = flops_svg(&out).unwrap();
    assert_eq!(row(&svg, "ffn"), [u128::MAX]);
}

#[test]
fn too_many_is_an_error_and_the_limit_draws() {
    assert!(matches!(params_svg(&[]), Err(ChartError::Empty(_))));
    let one = params(&["gpt2"]).remove(0);
    let many = vec![one.clone(); MAX_SERIES + 1];
    assert_eq!(
        params_svg(&many),
        Err(ChartError::TooMany {
            what: "models",
            count: MAX_SERIES + 1,
            max: MAX_SERIES
        })
    );
    texts(&params_svg(&many[..MAX_SERIES]).unwrap());

    let mut out = memory(&["gpt2"], None, Some("seq=1k,2k"));
    if let MemoryResult::Sweep { points, .. } = &mut out.models[0].result {
        let first = points[0].1.clone();
        *points = (1..=MAX_POINTS as u64)
            .map(|n| (llmsize_engine::Swept::SeqLen(n), first.clone()))
            .collect();
    }
    let svg = memory_svg(&out).unwrap();
    keep("memory-256-points.svg", &svg);
    assert_eq!(table_row(&svg, "256").len(), 2);
    if let MemoryResult::Sweep { points, .. } = &mut out.models[0].result {
        let extra = points[0].clone();
        points.push(extra);
    }
    assert!(matches!(
        memory_svg(&out),
        Err(ChartError::TooMany {
            what: "sweep points",
            ..
        })
    ));
}

#[test]
fn snapshots() {
    for name in ["gpt2", "llama-2-7b", "Mixtral-8x7B-v0.1"] {
        let r = params(&[name]);
        insta::assert_snapshot!(format!("params-{name}.svg"), params_svg(&r).unwrap());
        insta::assert_snapshot!(
            format!("params-{name}.mmd"),
            llmsize_charts::params_mermaid(&r[0])
        );
        insta::assert_snapshot!(
            format!("memory-{name}-rtx4090.svg"),
            memory_svg(&memory(&[name], Some("rtx4090"), None)).unwrap()
        );
        insta::assert_snapshot!(
            format!("flops-{name}.svg"),
            flops_svg(&flops(&[name], None)).unwrap()
        );
    }
    insta::assert_snapshot!(
        "memory-llama-2-7b-seq-sweep.svg",
        memory_svg(&memory(
            &["llama-2-7b"],
            Some("rtx4090"),
            Some("seq=1k,4k,16k,32k")
        ))
        .unwrap()
    );
}

fn train(model: &str, gpu: Option<&str>) -> llmsize_engine::TrainOutcome {
    let mut req = llmsize_engine::TrainRequest::new(model);
    req.gpu = gpu.map(str::to_owned);
    engine().train(&req).unwrap()
}

#[test]
fn training_memory_carries_every_term() {
    for (model, gpu) in [("llama-2-7b", "h100"), ("gpt2", "rtx4090")] {
        let out = train(model, Some(gpu));
        let svg = stable(|| llmsize_charts::train_svg(&out).unwrap());
        keep(&format!("train-{model}-{gpu}.svg"), &svg);
        let p = &out.report.per_gpu;
        for t in &p.terms {
            assert_eq!(row(&svg, &t.key), [t.value], "{model} {}", t.key);
        }
        assert_eq!(row(&svg, "per GPU"), [p.bytes]);
        assert_eq!(p.terms.iter().map(|t| t.value).sum::<u128>(), p.bytes);
        let (g, _) = out.gpu.unwrap();
        assert_eq!(row(&svg, "GPU memory"), [u128::from(g.memory_bytes)]);
    }
}

#[test]
fn a_placed_model_has_a_bar_per_gpu() {
    // Llama-2-70b over 4 H100s in 2 pipeline stages of tensor-parallel pairs: one bar per
    // stage, each with that stage's own figures (every GPU of a stage holds the same).
    let mut req = MemoryRequest::new("Llama-2-70b-hf");
    req.gpu = Some("h100x4".to_owned());
    req.tp = Some(2);
    req.pp = Some(2);
    let out = engine().memory(&req).unwrap();
    let MemoryResult::Single { report: r, .. } = &out.models[0].result else {
        panic!("one point")
    };
    let s = r.serving.as_ref().expect("a pipeline is placed");
    assert_eq!(s.stages.len(), 2);
    let svg = stable(|| memory_svg(&out).unwrap());
    keep("memory-llama-2-70b-pp2-tp2.svg", &svg);
    let weights: Vec<u128> = s.stages.iter().map(|st| u128::from(st.weights)).collect();
    let totals: Vec<u128> = s.stages.iter().map(|st| u128::from(st.total)).collect();
    assert_eq!(row(&svg, "weights"), weights);
    assert_eq!(row(&svg, "total per GPU"), totals);
    // The most loaded stage is the report's per-GPU figure.
    assert!(totals.contains(&u128::from(r.per_gpu)));
    assert!(
        texts(&svg)
            .iter()
            .any(|t| t.s == "Llama-2-70b-hf · GPUs 0–1")
    );
}
