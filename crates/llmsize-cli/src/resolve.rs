//! MODEL arguments → config text: a file, a directory with `config.json`, or a preset.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow};
use llmsize_adapters::presets;

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

/// An error with a `hint:` line under it.
pub(crate) fn with_hint(message: String, hint: String) -> anyhow::Error {
    anyhow!("hint: {hint}").context(message)
}

fn name_of(path: &Path) -> String {
    let dir_name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    if path.file_name().is_some_and(|n| n == "config.json") {
        path.parent()
            .and_then(dir_name)
            .unwrap_or_else(|| "config".into())
    } else {
        path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        )
    }
}

/// Resolve one MODEL argument.
pub(crate) fn resolve(arg: &str) -> anyhow::Result<Found> {
    let path = PathBuf::from(arg);
    if path.is_dir() {
        let config = path.join("config.json");
        if !config.is_file() {
            return Err(with_hint(
                format!(
                    "`{}` is a directory without a `config.json`",
                    path.display()
                ),
                "pass the `config.json` itself, or a directory that contains one".into(),
            ));
        }
        return read_file(&config);
    }
    if path.is_file() {
        return read_file(&path);
    }
    if let Some(p) = presets::find(arg) {
        return Ok(Found {
            name: p.id.to_owned(),
            source: format!("preset {}", p.hf_repo.unwrap_or(p.id)),
            file: format!("preset `{}`", p.id),
            text: p.config.to_owned(),
        });
    }
    let suggestions = presets::suggest(arg, 3).join(", ");
    if arg.ends_with(".json")
        || arg.starts_with('.')
        || arg.starts_with('/')
        || arg.contains(std::path::MAIN_SEPARATOR) && !arg.contains('/')
    {
        return Err(with_hint(
            format!("`{arg}`: no such file or directory"),
            format!("check the path; or name a preset, e.g. {suggestions}"),
        ));
    }
    Err(with_hint(
        format!("`{arg}` is neither a file, a directory nor a built-in preset"),
        format!("did you mean: {suggestions}? (`llmsize presets` lists them all)"),
    ))
}

fn read_file(path: &Path) -> anyhow::Result<Found> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("failed to read `{}`", path.display()))?;
    Ok(Found {
        name: name_of(path),
        source: path.display().to_string(),
        file: path.display().to_string(),
        text,
    })
}
