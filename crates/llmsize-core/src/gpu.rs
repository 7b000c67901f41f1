//! Built-in accelerators: memory, bandwidth and dense peak FLOP/s, each with its source.
//!
//! Peaks are **dense** (without 2:4 sparsity), as MFU is defined; memory is the total a
//! driver reports (`nvidia-smi`'s "Total" in MiB for NVIDIA parts), which is what a process
//! can at most use before the runtime takes its share.

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
        source: "NVIDIA Ada GPU architecture whitepaper, RTX 4090 (dense, FP32 accumulate)",
    },
    Gpu {
        name: "RTX-3090-24GB",
        aliases: &["rtx3090", "3090", "geforcertx3090"],
        memory_bytes: 24_576 * MIB,
        memory_source: "nvidia-smi total, 24,576 MiB",
        bandwidth: 936.0e9,
        peak_16bit: 71.0e12,
        peak_fp8: None,
        source: "NVIDIA Ampere GA102 whitepaper, RTX 3090 (dense, FP16 accumulate)",
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
];

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
            let n: u64 = count
                .parse()
                .map_err(|_| format!("`{count}` is not a GPU count"))?;
            if n == 0 {
                return Err(format!("`{spec}`: the GPU count must be at least 1"));
            }
            return Ok((gpu, n));
        }
    }
    find(s).map(|g| (g, 1)).ok_or_else(|| unknown(s))
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
        assert!(
            parse_spec("tpu-v5")
                .unwrap_err()
                .contains("known: H100-SXM-80GB")
        );
    }
}
