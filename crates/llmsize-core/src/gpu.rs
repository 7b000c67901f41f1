//! Built-in accelerators: memory, bandwidth and dense peak FLOP/s, each with its source.
//!
//! Peaks are **dense** (without 2:4 sparsity), as MFU is defined; memory is the total a
//! driver reports (`nvidia-smi`'s "Total" in MiB for NVIDIA parts), which is what a process
//! can at most use before the runtime takes its share.

use crate::limits::MAX_GPUS;

/// One accelerator model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gpu {
    /// Canonical name (`H100-SXM-80GB`).
    pub name: &'static str,
    /// Other names people type (lowercase, without spaces, `-` or `_`).
    pub aliases: &'static [&'static str],
    /// Device memory in bytes.
    pub memory_bytes: u64,
    /// Where the memory figure comes from.
    pub memory_source: &'static str,
    /// Memory bandwidth in bytes per second.
    pub bandwidth: f64,
    /// Dense 16-bit tensor peak (bf16, or fp16 where there is no bf16), FLOP/s.
    pub peak_16bit: f64,
    /// Dense FP8 tensor peak, FLOP/s, where the part has FP8.
    pub peak_fp8: Option<f64>,
    /// Datasheet the bandwidth and peaks come from.
    pub source: &'static str,
}

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The table.
pub static GPUS: &[Gpu] = &[
    Gpu {
        name: "H100-SXM-80GB",
        aliases: &["h100", "h100sxm", "h10080gb", "h100sxm80gb", "h100sxm5"],
        memory_bytes: 81_559 * MIB,
        memory_source: "nvidia-smi total, 81,559 MiB",
        bandwidth: 3.35e12,
        peak_16bit: 989.4e12,
        peak_fp8: Some(1978.9e12),
        source: "NVIDIA H100 Tensor Core GPU datasheet (SXM5; dense)",
    },
    Gpu {
        name: "H100-PCIe-80GB",
        aliases: &["h100pcie", "h100pcie80gb"],
        memory_bytes: 81_559 * MIB,
        memory_source: "nvidia-smi total, 81,559 MiB",
        bandwidth: 2.0e12,
        peak_16bit: 756.0e12,
        peak_fp8: Some(1513.0e12),
        source: "NVIDIA H100 Tensor Core GPU datasheet (PCIe; dense)",
    },
    Gpu {
        name: "H200-141GB",
        aliases: &["h200", "h200sxm", "h200141gb"],
        memory_bytes: 143_771 * MIB,
        memory_source: "nvidia-smi total, 143,771 MiB",
        bandwidth: 4.8e12,
        peak_16bit: 989.4e12,
        peak_fp8: Some(1978.9e12),
        source: "NVIDIA H200 Tensor Core GPU datasheet (SXM; dense)",
    },
    Gpu {
        name: "B200-180GB",
        aliases: &["b200", "b200180gb"],
        memory_bytes: 180 * 1_000_000_000,
        memory_source: "NVIDIA HGX B200 datasheet, 180 GB per GPU",
        bandwidth: 7.7e12,
        peak_16bit: 2250.0e12,
        peak_fp8: Some(4500.0e12),
        source: "NVIDIA HGX B200 datasheet (per GPU; dense = half the sparse figure)",
    },
    Gpu {
        name: "A100-SXM-80GB",
        aliases: &["a100", "a10080gb", "a100sxm", "a100sxm80gb", "a100pcie80gb"],
        memory_bytes: 81_920 * MIB,
        memory_source: "nvidia-smi total, 81,920 MiB",
        bandwidth: 2.039e12,
        peak_16bit: 312.0e12,
        peak_fp8: None,
        source: "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM; dense)",
    },
    Gpu {
        name: "A100-40GB",
        aliases: &["a10040gb", "a100sxm40gb", "a100pcie40gb"],
        memory_bytes: 40_960 * MIB,
        memory_source: "nvidia-smi total, 40,960 MiB",
        bandwidth: 1.555e12,
        peak_16bit: 312.0e12,
        peak_fp8: None,
        source: "NVIDIA A100 Tensor Core GPU datasheet (40GB; dense)",
    },
    Gpu {
        name: "L40S-48GB",
        aliases: &["l40s", "l40s48gb"],
        memory_bytes: 46_068 * MIB,
        memory_source: "nvidia-smi total, 46,068 MiB",
        bandwidth: 864.0e9,
        peak_16bit: 362.05e12,
        peak_fp8: Some(733.0e12),
        source: "NVIDIA L40S datasheet (dense)",
    },
    Gpu {
        name: "L4-24GB",
        aliases: &["l4", "l424gb"],
        memory_bytes: 23_034 * MIB,
        memory_source: "nvidia-smi total, 23,034 MiB",
        bandwidth: 300.0e9,
        peak_16bit: 121.0e12,
        peak_fp8: Some(242.5e12),
        source: "NVIDIA L4 datasheet (dense)",
    },
    Gpu {
        name: "A10-24GB",
        aliases: &["a10", "a1024gb"],
        memory_bytes: 23_028 * MIB,
        memory_source: "nvidia-smi total, 23,028 MiB",
        bandwidth: 600.0e9,
        peak_16bit: 125.0e12,
        peak_fp8: None,
        source: "NVIDIA A10 datasheet (dense)",
    },
    Gpu {
        name: "RTX-4090-24GB",
        aliases: &["rtx4090", "4090", "geforcertx4090"],
        memory_bytes: 24_564 * MIB,
        memory_source: "nvidia-smi total, 24,564 MiB",
        bandwidth: 1008.0e9,
        peak_16bit: 165.2e12,
        peak_fp8: Some(330.3e12),
        source: "NVIDIA Ada GPU architecture whitepaper, Appendix A, RTX 4090: peak FP16/BF16 tensor 165.2 TFLOP/s dense with FP32 accumulate (330.3 with FP16 accumulate), FP8 330.3 with FP32 accumulate",
    },
    Gpu {
        name: "RTX-3090-24GB",
        aliases: &["rtx3090", "3090", "geforcertx3090"],
        memory_bytes: 24_576 * MIB,
        memory_source: "nvidia-smi total, 24,576 MiB",
        bandwidth: 936.0e9,
        peak_16bit: 71.0e12,
        peak_fp8: None,
        source: "NVIDIA Ampere GA102 GPU architecture whitepaper, Appendix A, RTX 3090: peak FP16/BF16 tensor 71 TFLOP/s dense with FP32 accumulate (142 with FP16 accumulate; GeForce halves the FP32-accumulate rate)",
    },
    Gpu {
        name: "T4-16GB",
        aliases: &["t4", "t416gb"],
        memory_bytes: 15_360 * MIB,
        memory_source: "nvidia-smi total, 15,360 MiB",
        bandwidth: 320.0e9,
        peak_16bit: 65.0e12,
        peak_fp8: None,
        source: "NVIDIA T4 datasheet (fp16; no bf16)",
    },
    Gpu {
        name: "V100-SXM2-32GB",
        aliases: &["v100", "v10032gb", "v100sxm2"],
        memory_bytes: 32_768 * MIB,
        memory_source: "nvidia-smi total, 32,768 MiB",
        bandwidth: 900.0e9,
        peak_16bit: 125.0e12,
        peak_fp8: None,
        source: "NVIDIA V100 datasheet (SXM2; fp16; no bf16)",
    },
    Gpu {
        name: "MI300X-192GB",
        aliases: &["mi300x", "mi300x192gb", "amdmi300x"],
        memory_bytes: 192 * GIB,
        memory_source: "AMD Instinct MI300X datasheet, 192 GB HBM3 (8 × 24 GiB stacks)",
        bandwidth: 5.3e12,
        peak_16bit: 1307.4e12,
        peak_fp8: Some(2614.9e12),
        source: "AMD Instinct MI300X datasheet (dense)",
    },
    Gpu {
        name: "MI325X-256GB",
        aliases: &["mi325x", "mi325x256gb", "amdmi325x"],
        memory_bytes: 256 * GIB,
        memory_source: "AMD Instinct MI325X datasheet, 256 GB HBM3E (8 × 32 GiB stacks)",
        bandwidth: 6.0e12,
        peak_16bit: 1307.4e12,
        peak_fp8: Some(2614.9e12),
        source: "AMD Instinct MI325X datasheet (dense; the MI300X's compute with HBM3E)",
    },
    Gpu {
        name: "RTX-5090-32GB",
        aliases: &["rtx5090", "5090", "geforcertx5090"],
        memory_bytes: 32_607 * MIB,
        memory_source: "nvidia-smi total, 32,607 MiB (32 GB GDDR7)",
        bandwidth: 1792.0e9,
        peak_16bit: 209.5e12,
        peak_fp8: Some(419.0e12),
        source: "NVIDIA RTX Blackwell GPU architecture whitepaper, Appendix A, RTX 5090: peak FP16/BF16 tensor 209.5 TFLOP/s dense with FP32 accumulate (419 with FP16 accumulate), FP8 419 with FP32 accumulate; 1,792 GB/s",
    },
    Gpu {
        name: "RTX-4080-16GB",
        aliases: &["rtx4080", "4080", "geforcertx4080"],
        memory_bytes: 16_376 * MIB,
        memory_source: "nvidia-smi total, 16,376 MiB (16 GB GDDR6X)",
        bandwidth: 716.8e9,
        peak_16bit: 97.5e12,
        peak_fp8: Some(194.9e12),
        source: "NVIDIA Ada GPU architecture whitepaper, Appendix A, RTX 4080: peak FP16/BF16 tensor 97.5 TFLOP/s dense with FP32 accumulate (194.9 with FP16 accumulate), FP8 194.9 with FP32 accumulate; 716.8 GB/s",
    },
    Gpu {
        name: "RTX-3060-12GB",
        aliases: &["rtx3060", "3060", "geforcertx3060", "rtx306012gb"],
        memory_bytes: 12_288 * MIB,
        memory_source: "nvidia-smi total, 12,288 MiB (12 GB GDDR6)",
        bandwidth: 360.0e9,
        peak_16bit: 25.6e12,
        peak_fp8: None,
        source: "NVIDIA Ampere GA102 GPU architecture whitepaper, Appendix A (GA106), RTX 3060: peak FP16/BF16 tensor 25.6 TFLOP/s dense with FP32 accumulate (51.2 with FP16 accumulate); 360 GB/s",
    },
    Gpu {
        name: "A10G-24GB",
        aliases: &["a10g", "a10g24gb"],
        memory_bytes: 23_028 * MIB,
        memory_source: "nvidia-smi total, 23,028 MiB (24 GB GDDR6, as the A10)",
        bandwidth: 600.0e9,
        peak_16bit: 70.0e12,
        peak_fp8: None,
        source: "AWS EC2 G5 (A10G): 24 GB GDDR6 at 600 GB/s as the A10, tensor peak 70 TFLOP/s dense FP16/BF16 as Baseten reports it (the A10 has 125; NVIDIA publishes no A10G datasheet; https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/)",
    },
    Gpu {
        name: "Apple-M2-Ultra-192GB",
        aliases: &["m2ultra", "m2ultra192gb", "applem2ultra"],
        memory_bytes: 147_456 * MIB,
        memory_source: UNIFIED_SOURCE,
        bandwidth: 800.0e9,
        peak_16bit: 27.2e12,
        peak_fp8: None,
        source: "Apple M2 Ultra: 800 GB/s unified memory (Apple newsroom, June 2023); 16-bit peak derived, not published: 76 GPU cores × 128 ALUs × 2 FLOPs × 1.398 GHz (Apple GPUs run FP16 at the FP32 rate, no tensor cores)",
    },
    Gpu {
        name: "Apple-M3-Max-128GB",
        aliases: &["m3max", "m3max128gb", "applem3max"],
        memory_bytes: 98_304 * MIB,
        memory_source: UNIFIED_SOURCE,
        bandwidth: 400.0e9,
        peak_16bit: 14.2e12,
        peak_fp8: None,
        source: "Apple M3 Max (40-core GPU): 400 GB/s unified memory (Apple newsroom, October 2023); 16-bit peak derived, not published: 40 GPU cores × 128 ALUs × 2 FLOPs × 1.38 GHz",
    },
    Gpu {
        name: "Apple-M4-Max-128GB",
        aliases: &["m4max", "m4max128gb", "applem4max"],
        memory_bytes: 98_304 * MIB,
        memory_source: UNIFIED_SOURCE,
        bandwidth: 546.0e9,
        peak_16bit: 16.1e12,
        peak_fp8: None,
        source: "Apple M4 Max (40-core GPU): 546 GB/s unified memory (Apple newsroom, October 2024); 16-bit peak derived, not published: 40 GPU cores × 128 ALUs × 2 FLOPs × 1.578 GHz",
    },
];

/// What the GPU of an Apple Silicon machine may use of its unified memory by default: Metal's
/// `recommendedMaxWorkingSetSize`, which llama.cpp logs at start-up (`ggml_metal_init`) and
/// honours. On the large machines listed here it is 75% of the unified memory: a 192 GB
/// M2 Ultra reports 154,618.82 MB = 147,456 MiB = 0.75 × 196,608 MiB (smaller machines get
/// about two thirds: 10,922.67 MB of a 16 GB M1, llama.cpp issue #687). `sudo sysctl
/// iogpu.wired_limit_mb=N` raises it; then pass `--gpu-mem`.
const UNIFIED_SOURCE: &str = "75% of the unified memory: Metal's default recommendedMaxWorkingSetSize on large machines (raise with `sysctl iogpu.wired_limit_mb`, then pass --gpu-mem)";

fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, ' ' | '-' | '_'))
        .collect::<String>()
        .to_ascii_lowercase()
}

/// Find a GPU by name or alias (case, spaces, `-` and `_` ignored).
#[must_use]
pub fn find(name: &str) -> Option<&'static Gpu> {
    let want = squash(name);
    GPUS.iter()
        .find(|g| squash(g.name) == want || g.aliases.contains(&want.as_str()))
}

/// `NAME[xCOUNT]` → the GPU and the count (`h100x8`, `A100-80GB x2`, `rtx4090`).
pub fn parse_spec(spec: &str) -> Result<(&'static Gpu, u64), String> {
    let s = spec.trim();
    let unknown = |name: &str| {
        format!(
            "unknown GPU `{name}`; known: {}",
            GPUS.iter().map(|g| g.name).collect::<Vec<_>>().join(", ")
        )
    };
    // `x8` counts only when what precedes it is a GPU (`rtx4090` is a name, not `rt` × 4090).
    if let Some((name, count)) = s.rsplit_once(['x', 'X', '*']) {
        let count = count.trim();
        if !count.is_empty()
            && count.chars().all(|c| c.is_ascii_digit())
            && let Some(gpu) = find(name.trim())
        {
            // All digits: a count that does not parse is past u64::MAX, so past the bound too.
            let n = count.parse::<u64>().ok().filter(|&n| n <= MAX_GPUS);
            let Some(n) = n else {
                return Err(format!(
                    "{count} GPUs: at most {} are counted",
                    crate::units::thousands(MAX_GPUS)
                ));
            };
            if n == 0 {
                return Err("the GPU count must be at least 1".to_owned());
            }
            return Ok((gpu, n));
        }
    }
    find(s).map(|g| (g, 1)).ok_or_else(|| unknown(s))
}

/// A GPU described by flags (`--gpu-mem 24GiB --gpu-bw 936GB/s --gpu-tflops 71`), alone or
/// overriding a named GPU's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CustomGpu {
    /// The named GPU whose other figures are kept (`--gpu`), if any.
    pub base: Option<&'static Gpu>,
    /// Memory, bytes.
    pub memory_bytes: Option<u64>,
    /// Bandwidth, bytes per second.
    pub bandwidth: Option<f64>,
    /// Dense 16-bit peak, FLOP/s.
    pub peak_16bit: Option<f64>,
}

impl CustomGpu {
    /// True when no figure was given (the named GPU, or none, is used as is).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.memory_bytes.is_none() && self.bandwidth.is_none() && self.peak_16bit.is_none()
    }
}

/// Custom GPUs made so far, each leaked once.
///
/// Why interning: every consumer (the memory fit, the speed roofline, the training fit, the
/// JSON) holds a `&'static Gpu`, as the table's rows are; an owned or `Cow` GPU would make
/// `MemoryOptions` and `SpeedOptions` non-`Copy` and thread a lifetime through all of them for
/// the one process-lifetime value a command-line run has. Leaking is bounded: equal
/// descriptions share one entry, and at most [`MAX_CUSTOM_GPUS`] distinct ones exist per
/// process (a long-lived Python session asking for new figures over and over gets an error,
/// not unbounded growth).
static CUSTOM: std::sync::Mutex<Vec<&'static Gpu>> = std::sync::Mutex::new(Vec::new());

pub use crate::limits::MAX_CUSTOM_GPUS;

/// The GPU a description names: the table's row when nothing is overridden, else an interned
/// custom GPU. Without a base, memory is required; a missing bandwidth or peak is 0 ("not
/// given"), which only speed estimates read.
pub fn custom(c: &CustomGpu) -> Result<&'static Gpu, String> {
    if let (Some(base), true) = (c.base, c.is_empty()) {
        return Ok(base);
    }
    if let Some(m) = c.memory_bytes
        && m == 0
    {
        return Err("`--gpu-mem` must be more than 0 bytes".into());
    }
    for (flag, v) in [("--gpu-bw", c.bandwidth), ("--gpu-tflops", c.peak_16bit)] {
        if let Some(v) = v
            && !(v.is_finite() && v > 0.0)
        {
            return Err(format!("`{flag}` must be a positive number"));
        }
    }
    let memory_bytes = match (c.memory_bytes, c.base) {
        (Some(m), _) => m,
        (None, Some(b)) => b.memory_bytes,
        (None, None) => {
            return Err(
                "a GPU described by flags needs its memory: `--gpu-mem 24GiB` (or name one with `--gpu`)"
                    .into(),
            );
        }
    };
    let gib = |b: u64| {
        #[expect(clippy::cast_precision_loss, reason = "display only")]
        let g = b as f64 / (1u64 << 30) as f64;
        format!("{g:.2} GiB")
    };
    let mut changed = Vec::new();
    if let Some(m) = c.memory_bytes {
        changed.push(format!("memory {}", gib(m)));
    }
    if let Some(bw) = c.bandwidth {
        changed.push(format!("{:.0} GB/s", bw / 1e9));
    }
    if let Some(p) = c.peak_16bit {
        changed.push(format!("{:.1} TFLOP/s", p / 1e12));
    }
    let name = match c.base {
        Some(b) => format!("{} ({})", b.name, changed.join(", ")),
        None => format!("custom GPU ({})", changed.join(", ")),
    };
    let gpu = Gpu {
        name: "",
        aliases: &[],
        memory_bytes,
        memory_source: "",
        bandwidth: c.bandwidth.or(c.base.map(|b| b.bandwidth)).unwrap_or(0.0),
        peak_16bit: c.peak_16bit.or(c.base.map(|b| b.peak_16bit)).unwrap_or(0.0),
        // An FP8 peak is kept only when the 16-bit one is the datasheet's.
        peak_fp8: match (c.peak_16bit, c.base) {
            (None, Some(b)) => b.peak_fp8,
            _ => None,
        },
        source: "",
    };
    let mut table = CUSTOM
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(g) = table.iter().find(|g| {
        g.name == name
            && g.memory_bytes == gpu.memory_bytes
            && g.bandwidth.to_bits() == gpu.bandwidth.to_bits()
            && g.peak_16bit.to_bits() == gpu.peak_16bit.to_bits()
    }) {
        return Ok(g);
    }
    if table.len() >= MAX_CUSTOM_GPUS {
        return Err(format!(
            "more than {MAX_CUSTOM_GPUS} distinct custom GPUs in one process"
        ));
    }
    let source = match c.base {
        Some(b) => format!("{}; overridden by flags: {}", b.source, changed.join(", ")),
        None => "given by flags (--gpu-mem, --gpu-bw, --gpu-tflops)".to_owned(),
    };
    let memory_source = match (c.memory_bytes, c.base) {
        (Some(m), _) => format!("--gpu-mem, {m} bytes"),
        (None, Some(b)) => b.memory_source.to_owned(),
        (None, None) => String::new(),
    };
    let leaked: &'static Gpu = Box::leak(Box::new(Gpu {
        name: Box::leak(name.into_boxed_str()),
        memory_source: Box::leak(memory_source.into_boxed_str()),
        source: Box::leak(source.into_boxed_str()),
        ..gpu
    }));
    table.push(leaked);
    Ok(leaked)
}

/// Split `24GiB`, `936 GB/s`, `3.35e12` into the number and its lowercase unit.
fn number_unit(s: &str) -> Option<(f64, String)> {
    let t = s.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '_'))
        .unwrap_or(t.len());
    // `e` starts a unit only when no digit follows it (`3e12` is a number).
    let (num, unit) = t.split_at(end);
    let x: f64 = num.replace('_', "").parse().ok()?;
    (x.is_finite() && x >= 0.0).then(|| (x, unit.trim().to_ascii_lowercase()))
}

/// `--gpu-mem`: `24GiB`, `24GB` (10⁹), `80 GiB`, `16384MiB`, or bytes with `B`; a bare number
/// is refused, since GB and GiB differ by 7%.
pub fn parse_memory(s: &str) -> Result<u64, String> {
    let bad = || format!("`{s}` is not a memory size; write it with its unit, e.g. 24GiB or 24GB");
    let (x, unit) = number_unit(s).ok_or_else(bad)?;
    let mult: f64 = match unit.as_str() {
        "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1_048_576.0,
        "gib" => 1_073_741_824.0,
        "tib" => 1_099_511_627_776.0,
        _ => return Err(bad()),
    };
    let v = (x * mult).round();
    if !(1.0..1.8e19).contains(&v) {
        return Err(format!(
            "`{s}` is out of range: a GPU's memory is at least 1 byte and below 16 EiB"
        ));
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "checked range"
    )]
    Ok(v as u64)
}

/// `--gpu-bw`: `936GB/s`, `3.35TB/s`, `1008 GB/s`; a bare number is GB/s.
pub fn parse_bandwidth(s: &str) -> Result<f64, String> {
    let bad = || format!("`{s}` is not a bandwidth; e.g. 936GB/s or 3.35TB/s");
    let (x, unit) = number_unit(s).ok_or_else(bad)?;
    let mult = match unit.trim_end_matches("/s").trim_end_matches("ps") {
        "" | "gb" | "g" => 1e9,
        "tb" | "t" => 1e12,
        "mb" | "m" => 1e6,
        "gib" => 1_073_741_824.0,
        "tib" => 1_099_511_627_776.0,
        _ => return Err(bad()),
    };
    positive(
        s,
        x * mult,
        1e18,
        "a bandwidth is above 0 and below 10⁹ TB/s",
    )
}

/// `v` when it is in `(0, max)`, else an out-of-range message saying `what`.
fn positive(s: &str, v: f64, max: f64, what: &str) -> Result<f64, String> {
    if v > 0.0 && v < max {
        Ok(v)
    } else {
        Err(format!("`{s}` is out of range: {what}"))
    }
}

/// `--gpu-tflops`: the dense 16-bit peak in TFLOP/s (`71`, `71T`, `989.4 TFLOPS`).
pub fn parse_tflops(s: &str) -> Result<f64, String> {
    let bad = || format!("`{s}` is not a peak in TFLOP/s; e.g. 71 or 989.4");
    let (x, unit) = number_unit(s).ok_or_else(bad)?;
    let v = match unit.as_str() {
        "" | "t" | "tflops" | "tflop/s" => x * 1e12,
        "p" | "pflops" | "pflop/s" => x * 1e15,
        _ => return Err(bad()),
    };
    positive(s, v, 1e24, "a peak is above 0 and below 10¹² TFLOP/s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_counts() {
        assert_eq!(parse_spec("h100x8").unwrap().0.name, "H100-SXM-80GB");
        assert_eq!(parse_spec("h100x8").unwrap().1, 8);
        assert_eq!(
            parse_spec("RTX 4090").unwrap(),
            (find("rtx4090").unwrap(), 1)
        );
        assert_eq!(parse_spec("A100-80GB x2").unwrap().1, 2);
        assert_eq!(parse_spec("mi300x").unwrap().1, 1);
        assert!(parse_spec("h100x0").is_err());
        // The bound, with the count given (the caller names the flag and spec): 2^20 GPUs,
        // not one more, and no count past it (nor one past u64::MAX, which does not parse).
        assert_eq!(parse_spec("h100x1048576").unwrap().1, 1 << 20);
        for count in ["1048577", "18446744073709551615", "99999999999999999999"] {
            assert_eq!(
                parse_spec(&format!("h100x{count}")).unwrap_err(),
                format!("{count} GPUs: at most 1,048,576 are counted")
            );
        }
        assert!(
            parse_spec("tpu-v5")
                .unwrap_err()
                .contains("known: H100-SXM-80GB")
        );
    }

    #[test]
    fn custom_gpus_are_interned_and_checked() {
        let c = CustomGpu {
            memory_bytes: Some(parse_memory("24GiB").unwrap()),
            bandwidth: Some(parse_bandwidth("936GB/s").unwrap()),
            peak_16bit: Some(parse_tflops("71").unwrap()),
            ..CustomGpu::default()
        };
        let a = custom(&c).unwrap();
        assert_eq!(a.memory_bytes, 24 << 30);
        assert!((a.bandwidth - 936e9).abs() < 1.0);
        assert!((a.peak_16bit - 71e12).abs() < 1.0);
        // Equal descriptions share one leaked entry.
        assert!(std::ptr::eq(a, custom(&c).unwrap()));
        // A named GPU with only its memory overridden keeps its speed figures.
        let modded = custom(&CustomGpu {
            base: find("rtx4090"),
            memory_bytes: Some(48 << 30),
            ..CustomGpu::default()
        })
        .unwrap();
        assert_eq!(modded.memory_bytes, 48 << 30);
        assert!((modded.bandwidth - 1008e9).abs() < 1.0);
        assert_eq!(modded.peak_fp8, Some(330.3e12));
        assert!(modded.name.starts_with("RTX-4090-24GB (memory 48.00 GiB"));
        // Nothing overridden: the table's own row.
        assert!(std::ptr::eq(
            custom(&CustomGpu {
                base: find("h100"),
                ..CustomGpu::default()
            })
            .unwrap(),
            find("h100").unwrap()
        ));
        assert!(
            custom(&CustomGpu::default())
                .unwrap_err()
                .contains("--gpu-mem")
        );
        assert!(parse_memory("24").unwrap_err().contains("unit"));
        assert_eq!(parse_memory("24GB"), Ok(24_000_000_000));
        assert_eq!(parse_memory("16384 MiB"), Ok(16 << 30));
        assert!((parse_bandwidth("3.35TB/s").unwrap() - 3.35e12).abs() < 1.0);
        assert!(parse_tflops("-3").is_err());
    }

    #[test]
    fn apple_unified_memory_is_three_quarters() {
        // Metal's recommendedMaxWorkingSetSize on a 192 GB M2 Ultra: 154,618.82 MB = 147,456 MiB,
        // 0.75 × 196,608 MiB.
        assert_eq!(find("m2ultra").unwrap().memory_bytes, 196_608 * MIB / 4 * 3);
        assert_eq!(find("m3max").unwrap().memory_bytes, 128 * GIB / 4 * 3);
    }
}
