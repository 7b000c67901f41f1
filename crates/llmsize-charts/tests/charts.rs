//! The charts of real reports: valid XML, the same bytes twice, and the exact numbers of the
//! report read back from the SVG text.

use llmsize_engine::{Engine, HubEnv, ParamsRequest};

fn engine() -> Engine {
    Engine::new(HubEnv::default())
}

/// Writes the chart to `$LLMSIZE_CHARTS_OUT/name` when that is set (to look at it).
fn keep(name: &str, text: &str) {
    if let Some(dir) = std::env::var_os("LLMSIZE_CHARTS_OUT") {
        std::fs::write(std::path::Path::new(&dir).join(name), text).unwrap();
    }
}

#[test]
fn params_gpt2() {
    let out = engine().params(&ParamsRequest::models(["gpt2"])).unwrap();
    let svg = llmsize_charts::params_svg(&out.reports).unwrap();
    keep("params-gpt2.svg", &svg);
}

#[test]
fn params_three() {
    let out = engine()
        .params(&ParamsRequest::models([
            "gpt2",
            "llama-2-7b",
            "Mixtral-8x7B-v0.1",
        ]))
        .unwrap();
    let svg = llmsize_charts::params_svg(&out.reports).unwrap();
    keep("params-three.svg", &svg);
    for r in &out.reports {
        let svg = llmsize_charts::params_svg(std::slice::from_ref(r)).unwrap();
        keep(&format!("params-{}.svg", r.name), &svg);
    }
}

fn memory(
    models: &[&str],
    gpu: Option<&str>,
    sweep: Option<&str>,
) -> llmsize_engine::MemoryOutcome {
    let mut req = llmsize_engine::MemoryRequest::new(models[0]);
    req.models = models.iter().map(|m| (*m).to_owned()).collect();
    req.gpu = gpu.map(str::to_owned);
    req.sweep = sweep.map(|s| llmsize_engine::Sweep::parse(s).unwrap());
    engine().memory(&req).unwrap()
}

#[test]
fn memory_views() {
    let cases: [(&str, &[&str], Option<&str>, Option<&str>); 6] = [
        (
            "memory-llama-4090.svg",
            &["llama-2-7b"],
            Some("rtx4090"),
            None,
        ),
        (
            "memory-three-h100.svg",
            &["gpt2", "llama-2-7b", "Mixtral-8x7B-v0.1"],
            Some("h100"),
            None,
        ),
        (
            "memory-mixtral-h100x2.svg",
            &["Mixtral-8x7B-v0.1"],
            Some("h100x2"),
            None,
        ),
        (
            "memory-llama-seq.svg",
            &["llama-2-7b"],
            Some("rtx4090"),
            Some("seq=1k,2k,4k,8k,16k,32k"),
        ),
        (
            "memory-two-seq.svg",
            &["llama-2-7b", "Mixtral-8x7B-v0.1"],
            None,
            Some("seq=1k,4k,16k"),
        ),
        (
            "memory-llama-dtype.svg",
            &["llama-2-7b"],
            Some("rtx4090"),
            Some("dtype=bf16,q8_0,q4_k_m"),
        ),
    ];
    for (file, models, gpu, sweep) in cases {
        let svg = llmsize_charts::memory_svg(&memory(models, gpu, sweep)).unwrap();
        keep(file, &svg);
    }
}

fn flops(models: &[&str], sweep: Option<&str>) -> llmsize_engine::FlopsOutcome {
    let mut req = llmsize_engine::FlopsRequest::new(models[0]);
    req.models = models.iter().map(|m| (*m).to_owned()).collect();
    req.sweep = sweep.map(|s| llmsize_engine::Sweep::parse(s).unwrap());
    engine().flops(&req).unwrap()
}

#[test]
fn flops_views() {
    let cases: [(&str, &[&str], Option<&str>); 4] = [
        ("flops-gpt2.svg", &["gpt2"], None),
        ("flops-mixtral.svg", &["Mixtral-8x7B-v0.1"], None),
        (
            "flops-three.svg",
            &["gpt2", "llama-2-7b", "Mixtral-8x7B-v0.1"],
            None,
        ),
        (
            "flops-seq.svg",
            &["llama-2-7b", "Mixtral-8x7B-v0.1"],
            Some("seq=1k,4k,16k,64k"),
        ),
    ];
    for (file, models, sweep) in cases {
        let svg = llmsize_charts::flops_svg(&flops(models, sweep)).unwrap();
        keep(file, &svg);
    }
}

#[test]
fn mermaid_views() {
    let out = engine()
        .params(&ParamsRequest::models([
            "gpt2",
            "llama-2-7b",
            "Mixtral-8x7B-v0.1",
            "t5-small",
            "gemma-2-2b",
        ]))
        .unwrap();
    for r in &out.reports {
        keep(
            &format!("{}.mmd", r.name),
            &llmsize_charts::params_mermaid(r),
        );
    }
}
