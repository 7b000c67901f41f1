//! Weight files as a count: tensors from SafeTensors or GGUF headers, grouped into the same
//! 13 components as `params`, buffers apart, bytes by dtype; and the audit that sets this
//! tensor-based count beside the config-based one.
//!
//! Pure: callers pass headers they parsed from bytes they read.

use std::collections::BTreeMap;
use std::sync::Arc;

use llmsize_core::{Category, ModelSpec};
use llmsize_weights::gguf::GgufHeader;
use llmsize_weights::gguf::split::GgufSet;
use llmsize_weights::names::{category_of_gguf, category_of_hf};
use llmsize_weights::safetensors::SafetensorsHeader;

/// One tensor of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name in the file.
    pub name: String,
    /// The file it is in (shared by the file's tensors).
    pub file: Arc<str>,
    /// Stored type (`BF16`, `Q4_K`, …).
    pub dtype: &'static str,
    /// Shape, outermost first.
    pub shape: Vec<u64>,
    /// Parameters it holds (packed 4-bit blocks count their unpacked weights).
    pub params: u64,
    /// Bytes of its data.
    pub bytes: u64,
    /// Where it belongs: a parameter category, [`Category::Buffer`] (saved, not a parameter:
    /// `position_ids`, `inv_freq`, masks, quantization scales) or [`Category::Unknown`].
    pub role: Category,
}

/// Which kind of files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// SafeTensors (one file or shards).
    Safetensors,
    /// llama.cpp GGUF.
    Gguf,
}

/// A whole checkpoint, from its headers.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// The format.
    pub format: Format,
    /// Files and their lengths, in order.
    pub files: Vec<(String, u64)>,
    /// Every tensor.
    pub entries: Vec<Entry>,
    /// Notable metadata (GGUF keys, SafeTensors `__metadata__`), as text.
    pub metadata: Vec<(String, String)>,
    /// Weight files beside the used ones that were not read, and why (another copy of the
    /// same weights, a format not read).
    pub ignored: Vec<Ignored>,
    /// Where the files disagree with their own description (an index naming tensors no shard
    /// holds, a wrong `metadata.total_size`): a disagreement in `audit`, a warning elsewhere.
    pub file_problems: Vec<String>,
}

/// A weight file that was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// Its name.
    pub file: String,
    /// Why it was not read.
    pub why: String,
}

/// A metadata value as short text (arrays, such as the tokenizer's, by their length).
fn value_text(v: &llmsize_weights::gguf::GgufValue) -> String {
    if let Some(a) = v.as_array() {
        format!("[{} items]", a.len())
    } else if let Some(s) = v.as_str() {
        s.to_owned()
    } else if let Some(b) = v.as_bool() {
        b.to_string()
    } else if let Some(n) = v.as_u64() {
        n.to_string()
    } else if let Some(n) = v.as_i64() {
        n.to_string()
    } else if let Some(f) = v.as_f64() {
        f.to_string()
    } else {
        String::new()
    }
}

impl Checkpoint {
    /// From SafeTensors headers (one per shard): `(file name, file length, header)`.
    #[must_use]
    pub fn from_safetensors(shards: &[(String, u64, SafetensorsHeader)]) -> Self {
        let mut entries = Vec::new();
        let mut metadata = Vec::new();
        // Keys already taken, so merging 65,536 keys a shard stays linear.
        let mut seen = std::collections::BTreeSet::new();
        for (file, _, header) in shards {
            let file: Arc<str> = Arc::from(file.as_str());
            for (k, v) in &header.metadata {
                if seen.insert(k.as_str()) {
                    metadata.push((k.clone(), v.clone()));
                }
            }
            for t in &header.tensors {
                let mut role = category_of_hf(&t.name);
                let mut params = t.elements;
                // MXFP4 checkpoints (gpt-oss) pack two 4-bit weights per byte in `*_blocks`;
                // their `*_scales` are quantization metadata, not parameters.
                if t.name.ends_with("_blocks") && t.dtype.as_str() == "U8" {
                    // One byte each, so no more than the file's length: doubling fits.
                    // saturates: never, one byte each, so no more than the file's length.
                    params = t.elements.saturating_mul(2);
                } else if t.name.ends_with("_scales") && t.dtype.as_str() == "U8" {
                    role = Category::Buffer;
                }
                entries.push(Entry {
                    name: t.name.clone(),
                    file: file.clone(),
                    dtype: t.dtype.as_str(),
                    shape: t.shape.clone(),
                    params,
                    bytes: t.bytes,
                    role,
                });
            }
        }
        Checkpoint {
            format: Format::Safetensors,
            files: shards.iter().map(|(f, len, _)| (f.clone(), *len)).collect(),
            entries,
            metadata,
            ignored: Vec::new(),
            file_problems: Vec::new(),
        }
    }

    /// A tensor name held by two files: `(name, first file, second file)`. Two copies of one
    /// weight would be counted twice, so the caller refuses them.
    #[must_use]
    pub fn tensor_in_two_files(&self) -> Option<(&str, &str, &str)> {
        let mut seen: std::collections::HashMap<&str, &str> =
            std::collections::HashMap::with_capacity(self.entries.len());
        for e in &self.entries {
            if let Some(first) = seen.insert(e.name.as_str(), &e.file)
                && first != &*e.file
            {
                return Some((e.name.as_str(), first, &e.file));
            }
        }
        None
    }

    /// From one GGUF file's header.
    #[must_use]
    pub fn from_gguf(file: &str, file_len: u64, header: &GgufHeader) -> Self {
        Self::from_gguf_set(&GgufSet {
            shards: vec![llmsize_weights::gguf::split::GgufShard {
                file: file.to_owned(),
                len: file_len,
            }],
            header: header.clone(),
            tensor_shard: vec![0; header.tensors.len()],
        })
    }

    /// From a GGUF model: one file, or every shard of a split one (each tensor names its own).
    #[must_use]
    pub fn from_gguf_set(set: &GgufSet) -> Self {
        let header = &set.header;
        let files: Vec<Arc<str>> = set
            .shards
            .iter()
            .map(|s| Arc::from(s.file.as_str()))
            .collect();
        let none: Arc<str> = Arc::from("");
        let entries = header
            .tensors
            .iter()
            .enumerate()
            .map(|(i, t)| Entry {
                name: t.name.clone(),
                file: set
                    .tensor_shard
                    .get(i)
                    .and_then(|s| files.get(*s))
                    .unwrap_or(&none)
                    .clone(),
                dtype: t.ggml_type.name(),
                shape: t.shape(),
                params: t.elements,
                bytes: t.bytes,
                role: category_of_gguf(&t.name),
            })
            .collect();
        let mut metadata = vec![("gguf.version".to_owned(), header.version.to_string())];
        for kv in &header.metadata {
            let mut text = value_text(&kv.value);
            if kv.key == "general.file_type"
                && let Some(name) = kv
                    .value
                    .as_u64()
                    .and_then(llmsize_core::ggml::llama_file_type_name)
            {
                text = format!("{text} ({name})");
            }
            metadata.push((kv.key.clone(), text));
        }
        Checkpoint {
            format: Format::Gguf,
            files: set.shards.iter().map(|s| (s.file.clone(), s.len)).collect(),
            entries,
            metadata,
            ignored: Vec::new(),
            file_problems: Vec::new(),
        }
    }

    /// The tensor-based count.
    pub fn summary(&self) -> Result<Summary, llmsize_core::SpecError> {
        // Each tensor's size was checked by its reader; their sums over many shards are
        // checked here.
        let add = |a: &mut u64, b: u64| -> Result<(), llmsize_core::SpecError> {
            *a = a
                .checked_add(b)
                .ok_or_else(|| llmsize_core::SpecError::TooLarge {
                    what: "the tensors' total".into(),
                })?;
            Ok(())
        };
        let mut components: BTreeMap<Category, u64> =
            Category::ALL.iter().map(|c| (*c, 0)).collect();
        let mut component_bytes = components.clone();
        let mut by_dtype: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let mut buffers = Vec::new();
        let mut unknown = Vec::new();
        let (mut total, mut param_bytes, mut all_bytes) = (0u64, 0u64, 0u64);
        for e in &self.entries {
            add(&mut all_bytes, e.bytes)?;
            match e.role {
                Category::Buffer => buffers.push(e.clone()),
                Category::Unknown => unknown.push(e.clone()),
                c => {
                    add(components.entry(c).or_default(), e.params)?;
                    add(component_bytes.entry(c).or_default(), e.bytes)?;
                    add(&mut total, e.params)?;
                    add(&mut param_bytes, e.bytes)?;
                    let d = by_dtype.entry(e.dtype.to_owned()).or_default();
                    add(&mut d.0, e.params)?;
                    add(&mut d.1, e.bytes)?;
                }
            }
        }
        Ok(Summary {
            total,
            components,
            component_bytes,
            by_dtype,
            buffers,
            unknown,
            param_bytes,
            all_bytes,
        })
    }
}

/// Counts of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Parameters (buffers and unknown names excluded).
    pub total: u64,
    /// Per category.
    pub components: BTreeMap<Category, u64>,
    /// Bytes per category.
    pub component_bytes: BTreeMap<Category, u64>,
    /// Parameters and bytes per stored type.
    pub by_dtype: BTreeMap<String, (u64, u64)>,
    /// Buffers (not parameters).
    pub buffers: Vec<Entry>,
    /// Names no rule places.
    pub unknown: Vec<Entry>,
    /// Bytes of the parameters.
    pub param_bytes: u64,
    /// Bytes of every tensor.
    pub all_bytes: u64,
}

/// A disagreement between config and tensors in one category.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The category.
    pub category: Category,
    /// From the config.
    pub config: u64,
    /// From the tensors.
    pub tensors: u64,
    /// What explains it, as far as it can be told.
    pub explanation: String,
    /// Tensors involved.
    pub names: Vec<String>,
}

/// The audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audit {
    /// Config-based per category.
    pub config: BTreeMap<Category, u64>,
    /// Config total.
    pub config_total: u64,
    /// Tensor-based.
    pub summary: Summary,
    /// Disagreements, explained.
    pub differences: Vec<Difference>,
    /// Where the files disagree with their own index ([`Checkpoint::file_problems`]).
    pub file_problems: Vec<String>,
}

impl Audit {
    /// True when every category agrees.
    #[must_use]
    pub fn agrees(&self) -> bool {
        self.differences.is_empty()
            && self.summary.unknown.is_empty()
            && self.file_problems.is_empty()
    }
}

/// The layer index in a tensor name (`layers.12.`, `h.3.`, `blk.7.`, `block.0.`, `layer.5.`).
fn layer_index(name: &str) -> Option<u64> {
    let parts: Vec<&str> = name.split('.').collect();
    parts.windows(2).find_map(|w| match *w {
        ["layers" | "h" | "blk" | "block" | "layer", index] => index.parse().ok(),
        _ => None,
    })
}

/// Compare a config-based count with a checkpoint, category by category.
pub fn audit(spec: &ModelSpec, checkpoint: &Checkpoint) -> Result<Audit, llmsize_core::SpecError> {
    let count = llmsize_core::count(spec)?;
    let config: BTreeMap<Category, u64> = count
        .components
        .iter()
        .map(|c| (c.category, c.count))
        .collect();
    let summary = checkpoint.summary()?;
    let layers = spec
        .stacks
        .iter()
        .map(|s| s.layers.len())
        .max()
        .unwrap_or(0);
    let tied = matches!(
        spec.head,
        llmsize_core::spec::OutputHead::Lm { tied: true, .. }
    );
    let mut differences = Vec::new();
    for category in Category::ALL {
        let want = config.get(&category).copied().unwrap_or(0);
        let got = summary.components.get(&category).copied().unwrap_or(0);
        if want == got {
            continue;
        }
        let in_category: Vec<&Entry> = checkpoint
            .entries
            .iter()
            .filter(|e| e.role == category)
            .collect();
        let extra_layers: Vec<String> = in_category
            .iter()
            .filter(|e| layer_index(&e.name).is_some_and(|i| i >= layers))
            .map(|e| e.name.clone())
            .collect();
        let extra_params: u64 = llmsize_core::checked::sum(
            "parameters of the layers past `num_hidden_layers`",
            in_category
                .iter()
                .filter(|e| layer_index(&e.name).is_some_and(|i| i >= layers))
                .map(|e| e.params),
        )?;
        let (explanation, names) = if !extra_layers.is_empty()
            && got.saturating_sub(want) == extra_params
        {
            (
                format!(
                    "{} tensors belong to layers at or beyond `num_hidden_layers` = {layers} (e.g. DeepSeek-V3's multi-token-prediction layer), which transformers does not build",
                    extra_layers.len()
                ),
                extra_layers,
            )
        } else if category == Category::LmHead && tied && got > want {
            (
                "the config ties the output head to the token table, but the file stores the head as a tensor of its own (a tied matrix saved twice)".to_owned(),
                in_category.iter().map(|e| e.name.clone()).collect(),
            )
        } else if category == Category::LmHead && !tied && got < want {
            (
                "the config has an untied output head but the file has no head tensor (the runtime will tie it to the token table)".to_owned(),
                Vec::new(),
            )
        } else {
            (
                format!(
                    "{got} by tensors vs {want} by the config; the tensors of this category are listed"
                ),
                in_category.iter().map(|e| e.name.clone()).collect(),
            )
        };
        differences.push(Difference {
            category,
            config: want,
            tensors: got,
            explanation,
            names,
        });
    }
    Ok(Audit {
        config,
        config_total: count.total,
        summary,
        differences,
        file_problems: checkpoint.file_problems.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::layer_index;

    #[test]
    fn layer_indices() {
        assert_eq!(layer_index("model.layers.61.mlp.gate.weight"), Some(61));
        assert_eq!(layer_index("transformer.h.3.attn.c_attn.weight"), Some(3));
        assert_eq!(layer_index("blk.7.attn_q.weight"), Some(7));
        assert_eq!(
            layer_index("encoder.block.0.layer.1.DenseReluDense.wi.weight"),
            Some(0)
        );
        assert_eq!(layer_index("model.embed_tokens.weight"), None);
    }
}

/// Renderers of `inspect` and `audit` as documents (pure): tables of tensors by component
/// and by stored type, the config against the files, and the files read.
pub mod render {
    use llmsize_core::Category;
    use llmsize_core::render::doc::{Cell, Column, Doc, Raw, Table, Tone};
    use llmsize_core::units::{bytes_both, human_count, thousands};

    use super::{Audit, Checkpoint, Format, Ignored, Summary};

    /// Buffers and unrecognised tensors a table lists by name before "… and N more".
    const LISTED: usize = 50;

    #[expect(clippy::cast_precision_loss, reason = "display only")]
    fn bpw(bytes: u64, params: u64) -> f64 {
        bytes as f64 * 8.0 / params.max(1) as f64
    }

    /// Bits per weight as text and the number behind it.
    fn bpw_cell(bytes: u64, params: u64) -> Cell {
        let b = bpw(bytes, params);
        Cell::with_raw(format!("{b:.4}"), Raw::Float(b))
    }

    /// `inspect` as a document.
    #[must_use]
    pub fn inspect(name: &str, c: &Checkpoint, s: &Summary) -> Doc {
        let mut doc = Doc::new();
        let kind = match c.format {
            Format::Safetensors => "SafeTensors",
            Format::Gguf => "GGUF",
        };
        // Lengths a server states can add past 2^64: said so, never a saturated figure.
        let file_bytes = llmsize_core::checked::sum("file bytes", c.files.iter().map(|(_, l)| *l))
            .map_or_else(|_| "more than 2^64 bytes".to_owned(), bytes_both);
        doc.title(format!(
            "{name}: {kind}, {} file(s), {file_bytes} ({} tensors)",
            c.files.len(),
            c.entries.len()
        ));
        let used: Vec<&str> = c.files.iter().map(|(f, _)| f.as_str()).collect();
        doc.table(files(&used, &c.ignored));
        file_problems(&mut doc, &c.file_problems);
        doc.blank();
        let mut t = Table::new(
            "components",
            vec![
                Column::left("component"),
                Column::right("parameters"),
                Column::right("share"),
                Column::right("bytes"),
            ],
        );
        for cat in Category::ALL {
            let n = s.components.get(&cat).copied().unwrap_or(0);
            if n > 0 {
                t.push(vec![
                    Cell::text(cat.as_str()),
                    Cell::count(n),
                    Cell::share(n, s.total),
                    Cell::count(s.component_bytes.get(&cat).copied().unwrap_or(0)),
                ]);
            }
        }
        t.push(vec![
            Cell::text("total").tone(Tone::Strong),
            Cell::count(s.total).tone(Tone::Strong),
            Cell::share(s.total, s.total).text_as(human_count(s.total)),
            Cell::count(s.param_bytes).tone(Tone::Strong),
        ]);
        doc.table(t);
        doc.blank().heading("by stored type");
        let mut t = Table::new(
            "dtypes",
            vec![
                Column::left("dtype"),
                Column::right("parameters"),
                Column::right("bytes"),
                Column::right("bits/weight"),
            ],
        );
        for (d, (p, b)) in &s.by_dtype {
            t.push(vec![
                Cell::text(d.clone()),
                Cell::count(*p),
                Cell::count(*b),
                bpw_cell(*b, *p),
            ]);
        }
        t.push(vec![
            Cell::text("all").tone(Tone::Strong),
            Cell::count(s.total),
            Cell::count(s.param_bytes),
            bpw_cell(s.param_bytes, s.total),
        ]);
        doc.table(t);
        if !s.buffers.is_empty() {
            doc.blank().heading("buffers (saved, not parameters)");
            let mut t = Table::new(
                "buffers",
                vec![
                    Column::left("tensor"),
                    Column::left("dtype"),
                    Column::left("shape"),
                    Column::right("elements"),
                ],
            );
            for b in s.buffers.iter().take(LISTED) {
                t.push(vec![
                    Cell::text(b.name.clone()),
                    Cell::text(b.dtype),
                    Cell::text(format!("{:?}", b.shape)),
                    Cell::count(b.params),
                ]);
            }
            doc.table(t);
            more(&mut doc, s.buffers.len());
        }
        if !s.unknown.is_empty() {
            doc.blank().heading("unrecognised tensors (not counted)");
            // A table is read by a person: the first ones and how many more (`--json` lists all).
            let mut t = Table::new(
                "unrecognised",
                vec![
                    Column::left("tensor"),
                    Column::left("dtype"),
                    Column::left("shape"),
                ],
            );
            for u in s.unknown.iter().take(LISTED) {
                t.push(vec![
                    Cell::text(u.name.clone()),
                    Cell::text(u.dtype),
                    Cell::text(format!("{:?}", u.shape)),
                ]);
            }
            doc.table(t);
            more(&mut doc, s.unknown.len());
        }
        let shown: Vec<&(String, String)> = c
            .metadata
            .iter()
            .filter(|(k, _)| {
                c.format == Format::Safetensors
                    || k.starts_with("general.")
                    || k.ends_with("context_length")
                    || k.ends_with("block_count")
                    || k.ends_with("embedding_length")
                    || k.ends_with("head_count")
                    || k.ends_with("head_count_kv")
                    || k.ends_with("expert_count")
                    || k == "gguf.version"
                    || k == "tokenizer.ggml.tokens"
            })
            .collect();
        if !shown.is_empty() {
            doc.blank().heading("metadata");
            let mut t = Table::new("metadata", vec![Column::left("key"), Column::fold("value")]);
            for (k, v) in shown {
                t.push(vec![Cell::text(k.clone()), Cell::text(v.clone())]);
            }
            doc.table(t);
        }
        doc
    }

    /// `… and N more` under a list cut at [`LISTED`].
    fn more(doc: &mut Doc, n: usize) {
        if let Some(more) = n.checked_sub(LISTED).filter(|m| *m > 0) {
            doc.line(format!("  … and {more} more (`--json` lists them all)"));
        }
    }

    /// What the files say against their index, when they disagree.
    fn file_problems(doc: &mut Doc, problems: &[String]) {
        if !problems.is_empty() {
            doc.blank().heading("the files disagree with their index:");
            for p in problems {
                doc.line(format!("  {p}"));
            }
        }
    }

    /// The files read and the ones beside them that were not, one row each (shards of one
    /// set run together as `first … last (N files)`).
    #[must_use]
    pub fn files(used: &[&str], ignored: &[Ignored]) -> Table {
        let mut t = Table::new(
            "files",
            vec![
                Column::left("files"),
                Column::fold("path"),
                Column::fold("why"),
            ],
        );
        match used {
            [first, .., last] if used.len() > 4 => t.push(vec![
                Cell::text("used"),
                Cell::text(format!("{first} … {last} ({} files)", used.len())),
            ]),
            some => {
                for f in some {
                    t.push(vec![Cell::text("used"), Cell::text(*f)]);
                }
            }
        }
        for i in ignored {
            t.push(vec![
                Cell::text("ignored").tone(Tone::Dim),
                Cell::text(i.file.clone()),
                Cell::text(i.why.clone()),
            ]);
        }
        t
    }

    /// A difference as `=` or `+1,536`/`-1,536`; CSV gets the number.
    fn difference(got: u64, want: u64) -> Cell {
        #[expect(
            clippy::arithmetic_side_effects,
            reason = "two u64 differ by less than 2^64 in either direction, which i128 holds"
        )]
        let diff = i128::from(got) - i128::from(want);
        if diff == 0 {
            Cell::with_raw("=", Raw::Int(0)).tone(Tone::Good)
        } else {
            let sign = if diff < 0 { '-' } else { '+' };
            Cell::with_raw(
                format!("{sign}{}", thousands(got.abs_diff(want))),
                Raw::Int(diff),
            )
            .tone(Tone::Bad)
        }
    }

    /// `audit` as a document.
    #[must_use]
    pub fn audit(name: &str, a: &Audit) -> Doc {
        let mut doc = Doc::new();
        doc.title(format!(
            "{name}: config-based count vs tensors in the weight files"
        ))
        .blank();
        let mut t = Table::new(
            "audit",
            vec![
                Column::left("component"),
                Column::right("config"),
                Column::right("tensors"),
                Column::right("difference"),
            ],
        );
        for cat in Category::ALL {
            let want = a.config.get(&cat).copied().unwrap_or(0);
            let got = a.summary.components.get(&cat).copied().unwrap_or(0);
            if want == 0 && got == 0 {
                continue;
            }
            t.push(vec![
                Cell::text(cat.as_str()),
                Cell::count(want),
                Cell::count(got),
                difference(got, want),
            ]);
        }
        t.push(vec![
            Cell::text("total").tone(Tone::Strong),
            Cell::count(a.config_total).tone(Tone::Strong),
            Cell::count(a.summary.total).tone(Tone::Strong),
            difference(a.summary.total, a.config_total),
        ]);
        doc.table(t);
        if !a.summary.buffers.is_empty() {
            doc.blank().line(format!(
                "buffers in the files, not parameters (not compared): {}",
                a.summary
                    .buffers
                    .iter()
                    .map(|b| format!("{} ({})", b.name, thousands(b.params)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        for d in &a.differences {
            doc.blank()
                .heading(format!("{}: {}", d.category.as_str(), d.explanation));
            for n in d.names.iter().take(12) {
                doc.line(format!("  {n}"));
            }
            if let Some(more) = d.names.len().checked_sub(12).filter(|m| *m > 0) {
                doc.line(format!("  … and {more} more"));
            }
        }
        file_problems(&mut doc, &a.file_problems);
        if !a.summary.unknown.is_empty() {
            doc.blank().heading("unrecognised tensors (not counted):");
            for u in &a.summary.unknown {
                doc.line(format!("  {}", u.name));
            }
        }
        doc.blank();
        if a.agrees() {
            doc.toned("agree: every component matches", Tone::Good);
        } else {
            doc.toned("disagree: see the differences above", Tone::Bad);
        }
        doc
    }
}
