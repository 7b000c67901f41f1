//! The seed files: the repository's own fixtures.

use std::fs;
use std::path::{Path, PathBuf};

use llmsize_weights::WeightsError;
use llmsize_weights::safetensors;

/// What a seed is, which decides the mutations and the code it is fed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The first `8 + N` bytes of a `.safetensors` file.
    Safetensors,
    /// A GGUF file or the start of one.
    Gguf,
    /// A `config.json`.
    Json,
}

/// One seed file.
#[derive(Debug, Clone)]
pub struct Seed {
    /// Path relative to the repository root.
    pub name: String,
    /// What it is.
    pub kind: Kind,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// For a header-only SafeTensors seed, the length of the data section its tensors cover,
    /// so mutated headers are also read as a file of their own length plus that.
    pub data_len: Option<u64>,
}

/// The directories and patterns of the seeds, relative to the repository root.
const SEED_DIRS: [(&str, &str, Kind); 8] = [
    (
        "crates/llmsize-weights/fixtures",
        ".safetensors.header",
        Kind::Safetensors,
    ),
    ("crates/llmsize-weights/fixtures", ".gguf", Kind::Gguf),
    ("tests/fixtures/gguf", ".header", Kind::Gguf),
    ("tests/fixtures/truth/configs", ".json", Kind::Json),
    ("tests/fixtures/holdout/configs", ".json", Kind::Json),
    // Every model type transformers builds, and their further configs (issue 9).
    ("tests/fixtures/coverage/configs", ".json", Kind::Json),
    ("tests/fixtures/coverage/extra/configs", ".json", Kind::Json),
    (
        "crates/llmsize-weights/fixtures/all-minilm-l6-v2",
        "config.json",
        Kind::Json,
    ),
];

/// Every seed under `root`, sorted by name so that a seed number means the same input on
/// every machine.
pub fn load(root: &Path) -> std::io::Result<Vec<Seed>> {
    let mut seeds = Vec::new();
    for (dir, suffix, kind) in SEED_DIRS {
        let mut files = Vec::new();
        walk(&root.join(dir), &mut files)?;
        for path in files {
            let name = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            if !name.ends_with(suffix) || seeds.iter().any(|s: &Seed| s.name == name) {
                continue;
            }
            let bytes = fs::read(&path)?;
            let data_len = (kind == Kind::Safetensors).then(|| safetensors_data_len(&bytes));
            seeds.push(Seed {
                name,
                kind,
                bytes,
                data_len,
            });
        }
    }
    seeds.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(seeds)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// The data section a header-only seed stands for: what its tensors cover, which the
/// reader reports when told the file is longer.
fn safetensors_data_len(prefix: &[u8]) -> u64 {
    match safetensors::parse_header(prefix, u64::MAX, "seed") {
        Err(WeightsError::DataSectionMismatch { covered, .. }) => covered,
        _ => 0,
    }
}
