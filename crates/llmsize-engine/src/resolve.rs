//! MODEL arguments → config text: a file, a directory with `config.json`, or a preset.

use std::path::{Path, PathBuf};

use llmsize_adapters::{ReadOptions, gguf_config, presets, read_config, read_config_map};
use llmsize_core::{ModelSpec, limits};

use crate::hub::HubEnv;
use crate::weights_io::{
    IndexOnly, Weights, file_name, find_weights, index_without_shards, not_a_file, read_gguf_model,
    read_index, read_safetensors,
};
use crate::{Error, hub, remote};

/// A config found for a MODEL argument.
pub(crate) struct Found {
    /// Display name.
    pub(crate) name: String,
    /// Where it came from, for the report (`preset`, a path).
    pub(crate) source: String,
    /// Label used in error messages (the path, or `preset NAME`).
    pub(crate) file: String,
    /// The JSON text.
    pub(crate) text: String,
}

fn name_of(path: &Path) -> String {
    let dir_name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    if path.file_name().is_some_and(|n| n == "config.json") {
        path.parent()
            .and_then(dir_name)
            .unwrap_or_else(|| "config".into())
    } else if let Some(stem) = split_prefix(path) {
        // Every shard of a split GGUF names the same model.
        stem
    } else {
        path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        )
    }
}

/// The name of a split GGUF's shards without the `-0000N-of-0000M.gguf` suffix.
fn split_prefix(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let split = llmsize_weights::gguf::split::parse_split_name(name.as_bytes())?;
    name.get(..split.prefix_len)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
}

/// How to find a MODEL.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lookup {
    /// Where Hub repo ids are looked up (`--online`, `--revision`, `--file`, …).
    pub(crate) hub: crate::HubOptions,
    /// What to do about weight files.
    pub(crate) weights: Want,
}

/// Whether weights are needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Want {
    /// Config only (params, flops).
    #[default]
    No,
    /// Read them when the model has them (memory measures real files).
    IfPresent,
    /// They are the point (inspect, audit).
    Required,
}

/// A MODEL argument, resolved: its config (if any) and its weight headers (if asked and any).
pub(crate) struct Model {
    /// Display name.
    pub(crate) name: String,
    /// The config text.
    pub(crate) config: Option<Found>,
    /// The weight headers.
    pub(crate) weights: Option<Weights>,
    /// `memory` of a folder holding a config and an index whose shards are not here: the
    /// index's `total_size` stands for the files.
    pub(crate) index_only: Option<IndexOnly>,
}

impl Model {
    /// The model description: from the config, else from GGUF metadata.
    ///
    /// GGUF metadata is turned into the equivalent `config.json` and read by the same
    /// function as a config file, so `--set`, its "never read" warning and the validation
    /// are the same for both.
    pub(crate) fn spec(&self, options: &ReadOptions) -> Result<ModelSpec, Error> {
        if let Some(found) = &self.config {
            let mut spec = read_config(&found.text, &found.file, &self.name, options)?;
            if let Some(base) = self.tuned_base(found) {
                spec.warnings.push(format!(
                    "counted as the base model `{}`: instruction tuning does not change the shapes",
                    base.id
                ));
            }
            return Ok(spec);
        }
        if let Some((file, header)) = self.weights.as_ref().and_then(Weights::gguf_header) {
            let map = gguf_config::config_from_gguf(header, file)?;
            return Ok(read_config_map(map, file, &self.name, options)
                .map_err(|e| gguf_config::name_gguf_keys(e, header, &options.overrides))?);
        }
        Err(Error::bad_input(
            format!(
                "`{}` has weights but no `config.json` to describe the model",
                self.name
            ),
            "put the config.json next to the weights, or use `llmsize inspect` to count the tensors",
        ))
    }

    /// The base preset this model stands for, when its name is a tuned release's
    /// (`Llama-3.1-8B-Instruct`) that was answered from the base preset's config.
    fn tuned_base(&self, found: &Found) -> Option<&'static presets::Preset> {
        let base = presets::find_tuned(&self.name)?;
        (found.file == format!("preset {}", base.id) && presets::find(&self.name).is_none())
            .then_some(base)
    }
}

fn model_from_dir(dir: &Path, name: String, lookup: &Lookup) -> Result<Model, Error> {
    let config = dir.join("config.json");
    if let Some(what) = not_a_file(&config) {
        return Err(Error::bad_input(
            format!("`{}` is {what}", config.display()),
            "a model's folder holds its `config.json` as a file",
        ));
    }
    let config = if config.is_file() {
        Some(read_file(&config)?)
    } else {
        None
    };
    // `memory` of a config with an index but not its shards sizes the files from the index.
    let index_only = if lookup.weights == Want::IfPresent && config.is_some() {
        index_without_shards(dir)?
    } else {
        None
    };
    let weights = if index_only.is_none() && (lookup.weights != Want::No || config.is_none()) {
        find_weights(dir)?
    } else {
        None
    };
    if config.is_none() && weights.is_none() {
        return Err(Error::not_found(
            format!(
                "`{}` holds neither a `config.json` nor weight files",
                dir.display()
            ),
            "pass a directory with config.json, .safetensors or .gguf files",
        ));
    }
    Ok(Model {
        name,
        config,
        weights,
        index_only,
    })
}

fn sibling_config(path: &Path) -> Result<Option<Found>, Error> {
    let c = path.parent().unwrap_or(Path::new(".")).join("config.json");
    // A `config.json` that is there but not a file is named by `read_file`, not skipped.
    if c.is_file() || not_a_file(&c).is_some() {
        read_file(&c).map(Some)
    } else {
        Ok(None)
    }
}

/// Resolve a MODEL: a path (config, weights, directory), a preset, or a Hub repo id from the
/// local cache (or, with `--online`, from the Hub).
pub(crate) fn resolve_model(arg: &str, lookup: &Lookup, env: &HubEnv) -> Result<Model, Error> {
    // The text of a config itself (a Python dict passed as JSON, or `llmsize params '{…}'`):
    // no path, preset or repo id starts with `{`.
    if arg.trim_start().starts_with('{') {
        let name = inline_name(arg);
        return Ok(Model {
            name: name.clone(),
            config: Some(Found {
                name,
                source: "inline config".into(),
                file: "inline config".into(),
                text: arg.to_owned(),
            }),
            weights: None,
            index_only: None,
        });
    }
    // Longer than any path: refused before any look-up (a preset search, a "did you mean"
    // over every preset) costs time in proportion to it.
    if arg.len() > limits::MAX_MODEL_NAME {
        let start: String = arg.chars().take(40).collect();
        return Err(Error::bad_input(
            format!(
                "MODEL `{start}…` is {} bytes long: not a preset, a Hub repo id or a path (at most {} bytes)",
                llmsize_core::units::thousands(arg.len() as u64),
                llmsize_core::units::thousands(limits::MAX_MODEL_NAME as u64)
            ),
            "pass a preset name, a Hub repo id (`org/name`), a path, or a config's JSON text (which starts with `{`)",
        ));
    }
    let path = PathBuf::from(arg);
    // `org/name:FILE` (or `--file FILE`) picks one file of a Hub repo; a path wins.
    if !path.exists()
        && let Some((repo, file)) = repo_and_file(arg, lookup)?
    {
        return resolve_repo_file(repo, &file, lookup, env);
    }
    if lookup.hub.file.is_some() {
        return Err(Error::bad_input(
            format!("`--file` picks a file of a Hub repo, and `{arg}` is not a repo id"),
            "pass the file's path as MODEL instead",
        ));
    }
    if path.is_dir() {
        return model_from_dir(&path, dir_name(&path), lookup);
    }
    if path.is_file() {
        if has_extension(arg, "gguf") {
            return Ok(Model {
                name: name_of(&path),
                config: None,
                weights: Some(read_gguf_model(&path)?),
                index_only: None,
            });
        }
        if has_extension(arg, "safetensors") {
            let (len, h) = read_safetensors(&path)?;
            return Ok(Model {
                name: name_of(&path),
                config: sibling_config(&path)?,
                weights: Some(Weights::safetensors(vec![(file_name(&path), len, h)])),
                index_only: None,
            });
        }
        if arg.to_ascii_lowercase().ends_with(".index.json") {
            return Ok(Model {
                name: dir_name(path.parent().unwrap_or(Path::new("."))),
                config: sibling_config(&path)?,
                weights: Some(read_index(&path)?),
                index_only: None,
            });
        }
        let found = read_file(&path)?;
        return Ok(Model {
            name: found.name.clone(),
            config: Some(found),
            weights: None,
            index_only: None,
        });
    }
    // There, but neither a file nor a folder (a FIFO, a device, a link to nothing): say
    // what it is, never open it (a FIFO would wait for a writer).
    if let Some(what) = not_a_file(&path) {
        return Err(Error::bad_input(
            format!("`{arg}` is {what}"),
            "pass a `config.json`, a weight file (`.safetensors`, `.gguf`) or a folder of them",
        ));
    }
    if hub::looks_like_repo_id(arg)
        && let Some(snapshot) = hub::snapshot(env, arg, &lookup.hub.revision)?
    {
        return model_from_dir(&snapshot.dir, arg.to_owned(), lookup);
    }
    // A preset answers config questions offline; weights must come from a cache or the Hub.
    if lookup.weights != Want::Required
        && let Some(p) = presets::find(arg)
    {
        return Ok(Model {
            name: p.id.to_owned(),
            config: Some(Found {
                name: p.id.to_owned(),
                source: format!("preset {}", p.hf_repo.unwrap_or(p.id)),
                file: format!("preset {}", p.id),
                text: p.config.to_owned(),
            }),
            weights: None,
            index_only: None,
        });
    }
    // `Llama-3.1-8B-Instruct`: a tuned release whose config has its base preset's sizes.
    if lookup.weights != Want::Required
        && !lookup.hub.online
        && let Some(p) = presets::find_tuned(arg)
    {
        let name = arg.trim().rsplit('/').next().unwrap_or(arg).to_owned();
        return Ok(Model {
            name: name.clone(),
            config: Some(Found {
                name,
                source: format!("preset {}", p.hf_repo.unwrap_or(p.id)),
                file: format!("preset {}", p.id),
                text: p.config.to_owned(),
            }),
            weights: None,
            index_only: None,
        });
    }
    if lookup.hub.online && hub::looks_like_repo_id(arg) {
        return remote::model(arg, None, lookup, env);
    }
    if lookup.weights == Want::Required && presets::find(arg).is_some() {
        return Err(Error::not_found(
            format!(
                "`{arg}` is a built-in preset (a config only), and its weights are not in the Hugging Face cache"
            ),
            "download the model, pass its directory, or add `--online` to read the headers from the Hub",
        ));
    }
    // A path that does not exist: say so, and do not offer presets for a typo in a path.
    if looks_like_path(arg) {
        let missing = first_missing(Path::new(arg));
        return Err(Error::not_found(
            format!("`{arg}`: no such file or directory"),
            format!("`{}` does not exist; check the path", missing.display()),
        ));
    }
    // "Did you mean" compares with every preset, in time proportional to the name's length:
    // a name longer than any preset or repo id gets none.
    let suggestions = if arg.len() <= limits::MAX_SUGGEST_LEN {
        presets::suggest(arg, 3)
    } else {
        Vec::new()
    };
    let did_you_mean = did_you_mean(arg, &suggestions);
    if hub::looks_like_repo_id(arg) {
        return Err(Error::not_found(
            format!("`{arg}` is neither a built-in preset nor in the local Hugging Face cache"),
            format!(
                "{did_you_mean}pass `--online` to read it from the Hub (HF_ENDPOINT, HF_TOKEN); `llmsize presets` lists the presets"
            ),
        ));
    }
    Err(Error::not_found(
        format!("`{arg}` is neither a file, a directory nor a built-in preset"),
        format!("{did_you_mean}`llmsize presets` lists them all"),
    ))
}

/// A MODEL argument meant as a path: a file extension llmsize reads, a leading `.`, `/` or
/// `~`, a trailing separator, or more separators than an `org/name` repo id has.
fn looks_like_path(arg: &str) -> bool {
    ["json", "gguf", "safetensors"]
        .iter()
        .any(|ext| has_extension(arg, ext))
        || arg.starts_with(['.', '/', '~'])
        || arg.ends_with(['/', std::path::MAIN_SEPARATOR])
        || arg.contains('\\')
        || arg.matches('/').count() > 1
}

/// The shortest leading part of `path` that does not exist (`./nope` of `./nope/config.json`).
fn first_missing(path: &Path) -> PathBuf {
    let mut so_far = PathBuf::new();
    for part in path.components() {
        so_far.push(part);
        if std::fs::symlink_metadata(&so_far).is_err() {
            return so_far;
        }
    }
    path.to_path_buf()
}

/// The repo and the picked file of `org/name:FILE` or `org/name --file FILE`; both at once
/// must agree.
fn repo_and_file<'a>(arg: &'a str, lookup: &Lookup) -> Result<Option<(&'a str, String)>, Error> {
    let (repo, inline) = match arg.split_once(':') {
        Some((repo, file)) if hub::looks_like_repo_id(repo) && !file.is_empty() => {
            (repo, Some(file))
        }
        _ => (arg, None),
    };
    let picked = match (inline, lookup.hub.file.as_deref()) {
        (Some(a), Some(b)) if a != b => {
            return Err(Error::bad_input(
                format!("`{arg}` picks `{a}`, and `--file` picks `{b}`"),
                "pick the file once: `org/name:FILE` or `--file FILE`",
            ));
        }
        (Some(a), _) => a.to_owned(),
        (None, Some(b)) if hub::looks_like_repo_id(repo) => b.to_owned(),
        (None, _) => return Ok(None),
    };
    if picked.starts_with('/') || picked.split(['/', '\\']).any(|c| c == ".." || c.is_empty()) {
        return Err(Error::bad_input(
            format!("`{picked}` is not a file name inside the repo `{repo}`"),
            "name a file as the repo lists it, e.g. `model-Q4_K_M.gguf` or `BF16/model-00001-of-00002.gguf`",
        ));
    }
    Ok(Some((repo, picked)))
}

/// One file of a Hub repo: from the local cache (read as the local file it is, so a split
/// GGUF is followed as any local one), else with `--online` from the Hub.
fn resolve_repo_file(
    repo: &str,
    file: &str,
    lookup: &Lookup,
    env: &HubEnv,
) -> Result<Model, Error> {
    if let Some(snapshot) = hub::snapshot(env, repo, &lookup.hub.revision)? {
        let path = snapshot.dir.join(file);
        // The file and those beside it (a split GGUF's other shards) stay in the repo.
        if let Some(dir) = path.parent().filter(|d| d.is_dir()) {
            snapshot.check_folder(dir, repo)?;
        }
        snapshot.check_file(&path, repo)?;
        if path.is_file() {
            let inner = Lookup {
                hub: crate::HubOptions {
                    file: None,
                    ..lookup.hub.clone()
                },
                ..lookup.clone()
            };
            let mut model = resolve_model(&path.to_string_lossy(), &inner, env)?;
            model.name = format!("{repo}:{file}");
            return Ok(model);
        }
        if !lookup.hub.online {
            return Err(Error::not_found(
                format!(
                    "`{repo}` is in the Hugging Face cache, but its snapshot `{}` has no file `{file}`",
                    snapshot.dir.display()
                ),
                "download that file, or add `--online` to read its header from the Hub",
            ));
        }
    }
    if lookup.hub.online {
        return remote::model(repo, Some(file), lookup, env);
    }
    Err(Error::not_found(
        format!("`{repo}` is not in the local Hugging Face cache"),
        "pass `--online` to read the file's header from the Hub (HF_ENDPOINT, HF_TOKEN)",
    ))
}

fn dir_name(p: &Path) -> String {
    p.canonicalize()
        .ok()
        .and_then(|c| c.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| p.display().to_string())
}

fn read_file(path: &Path) -> Result<Found, Error> {
    let text = crate::weights_io::read_text(path)?;
    Ok(Found {
        name: name_of(path),
        source: path.display().to_string(),
        file: path.display().to_string(),
        text,
    })
}

/// `path` ends in `.ext`, in any case (`Model.GGUF`).
fn has_extension(path: &str, ext: &str) -> bool {
    Path::new(path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// The name of an inline config: its `_name_or_path` (what `to_dict()` of a transformers
/// config carries) when it is a short string, else `config`.
fn inline_name(text: &str) -> String {
    serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text)
        .ok()
        .and_then(|m| {
            m.get("_name_or_path")
                .and_then(serde_json::Value::as_str)
                .filter(|n| !n.is_empty() && n.len() <= 200)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "config".into())
}

/// The runs of digits in a name: its sizes and versions (`Mistral-7B-v0.3` → 7, 0, 3).
fn numbers_of(name: &str) -> Vec<&str> {
    name.split(|c: char| !c.is_ascii_digit())
        .filter(|run| !run.is_empty())
        .collect()
}

/// The parts of a name, without its `org/` prefix, that carry a number (`7B` and `v0.3` of
/// `mistralai/Mistral-7B-v0.3`).
fn numbered_parts(name: &str) -> Vec<&str> {
    let base = name.trim().rsplit('/').next().unwrap_or(name);
    base.split(['-', '_'])
        .filter(|part| part.bytes().any(|b| b.is_ascii_digit()))
        .collect()
}

/// The parts of `these` that `those` lacks, in any case.
fn parts_not_in<'a>(these: &[&'a str], those: &[&str]) -> Vec<&'a str> {
    these
        .iter()
        .copied()
        .filter(|p| !those.iter().any(|o| o.eq_ignore_ascii_case(p)))
        .collect()
}

/// How a suggested preset's name differs from the name typed in its sizes and versions, in
/// the words of the two names (`v0.1, not v0.3`; `70b, not 7`): all that is known of a model
/// that is not a preset is its name.
fn how_numbers_differ(arg: &str, preset: &str) -> String {
    let (typed, theirs) = (numbered_parts(arg), numbered_parts(preset));
    let (only_theirs, only_typed) = (parts_not_in(&theirs, &typed), parts_not_in(&typed, &theirs));
    match (only_theirs.is_empty(), only_typed.is_empty()) {
        (false, false) => format!("{}, not {}", only_theirs.join("-"), only_typed.join("-")),
        (false, true) => format!("{}; no size or version typed", only_theirs.join("-")),
        (true, false) => format!("without {}", only_typed.join("-")),
        (true, true) => "its sizes or version differ".to_owned(),
    }
}

/// "Did you mean", where a suggestion whose sizes or version differ from the name typed is
/// said to be another model, with how its name's numbers differ (`Mistral-7B-v0.1 (v0.1, not
/// v0.3)`: another vocabulary and window), never offered as the same one spelled otherwise.
fn did_you_mean(arg: &str, suggestions: &[&str]) -> String {
    let wanted = numbers_of(arg);
    let (same, other): (Vec<&str>, Vec<&str>) =
        suggestions.iter().partition(|s| numbers_of(s) == wanted);
    let same_part = if same.is_empty() {
        String::new()
    } else {
        format!("did you mean: {}? ", same.join(", "))
    };
    let other_part = if other.is_empty() {
        String::new()
    } else {
        let lead = match (same.is_empty(), other.len()) {
            (true, 1) => "the nearest preset is another model",
            (true, _) => "the nearest presets are other models",
            (false, 1) => "also near, another model",
            (false, _) => "also near, other models",
        };
        let named: Vec<String> = other
            .iter()
            .map(|s| format!("{s} ({})", how_numbers_differ(arg, s)))
            .collect();
        format!("{lead}: {}; ", named.join(", "))
    };
    same_part + &other_part
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_model_is_named_with_how_its_numbers_differ() {
        assert_eq!(
            how_numbers_differ("Mistral-7B-v0.2", "Mistral-7B-v0.1"),
            "v0.1, not v0.2"
        );
        assert_eq!(
            how_numbers_differ("llama-2-7", "Llama-2-70b-hf"),
            "70b, not 7"
        );
        assert_eq!(how_numbers_differ("llama-2-7", "llama-7b"), "7b, not 2-7");
        assert_eq!(
            how_numbers_differ("mistral", "Mistral-7B-v0.1"),
            "7B-v0.1; no size or version typed"
        );
        assert_eq!(how_numbers_differ("gpt2-32k", "gpt2"), "without 32k");
        // The org prefix is no part of the name's numbers.
        assert_eq!(
            how_numbers_differ("org2/Qwen3-9B", "Qwen3-8B"),
            "8B, not 9B"
        );
    }

    #[test]
    fn did_you_mean_offers_only_the_same_numbers_as_the_same_model() {
        assert_eq!(
            did_you_mean("Mistral-7B-v0.2", &["Mistral-7B-v0.1", "Mistral-7B-v0.3"]),
            "the nearest presets are other models: Mistral-7B-v0.1 (v0.1, not v0.2), \
             Mistral-7B-v0.3 (v0.3, not v0.2); "
        );
        assert_eq!(
            did_you_mean("gpt-2", &["gpt2", "gpt2-xl"]),
            "did you mean: gpt2, gpt2-xl? "
        );
        assert_eq!(
            did_you_mean("llama-2-7", &["Llama-2-7b-hf", "Llama-2-70b-hf"]),
            "did you mean: Llama-2-7b-hf? also near, another model: Llama-2-70b-hf (70b, not 7); "
        );
        assert_eq!(did_you_mean("qwerty", &[]), "");
    }
}
