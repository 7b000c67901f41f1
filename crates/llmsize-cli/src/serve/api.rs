//! The JSON API: a query string becomes the command line that asks the same question, parsed
//! by the CLI's parser and run by the CLI's command code, so an answer is byte for byte what
//! `llmsize <command> … --json` prints, and a bad request gets the message the CLI prints.
//!
//! `GET /api/memory?model=llama-2-7b&gpu=h100&seq=8192` runs
//! `llmsize memory --gpu=h100 --seq-len=8192 --json -- llama-2-7b`. A command's keys are its
//! clap options less those that read files or the network ([`CLI_ONLY`], each with its
//! reason), so the API cannot drift from the CLI; an unknown key is a 400 naming it. Values
//! travel as `--flag=value` and models after `--`, so no value is ever read as another flag.

use std::path::Path;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use clap::Parser as _;
use llmsize_core::render::doc::TextOptions;
use llmsize_engine::{Engine, HubEnv};

use super::{Shared, plain};
use crate::Outcome;
use crate::cli::{Cli, Command};
use crate::commands::{self, Env};

/// The server's command environment: an engine with no Hugging Face cache, token or
/// endpoint (so a name resolves to a preset or nothing, never to a folder on this machine),
/// and tables laid out as for a pipe.
pub(crate) fn server_env() -> Env {
    Env {
        engine: Engine::new(HubEnv::default()),
        text: TextOptions::default(),
    }
}

/// The options of the CLI that the API does not take, each with the reason. Every other
/// option of a command is a query key of the same name (`_` for `-`): the declaration is
/// clap's (`crate::cli`), so an option added to a command is a key of its API too, and
/// `tests::every_cli_option_is_a_key_or_says_why_not` fails on an option in neither.
pub(crate) const CLI_ONLY: &[(&str, &str)] = &[
    (
        "online",
        "reaches the network: the server answers from presets and posted configs",
    ),
    ("revision", "a Hub revision, for `--online`"),
    ("timeout", "a network timeout, for `--online`"),
    ("deadline", "a transfer deadline, for `--online`"),
    (
        "file",
        "names a file of this machine, which a request never reads",
    ),
    (
        "jobs",
        "threads of one CLI run: the server has its own pool",
    ),
    ("format", "the API's own `format=` key"),
    (
        "json",
        "the API answers JSON unless `format=` says otherwise",
    ),
    ("wide", "the API lays tables out as for a pipe"),
    ("help", "clap's help text, not a question"),
    ("version", "clap's version text, not a question"),
];

/// Short names the API takes beside the options' own: `seq` for `seq_len`.
const ALIASES: &[(&str, &str)] = &[("seq", "seq_len")];

/// What a command accepts from a query string besides `model`, `config` and `format`.
#[derive(Debug, Default)]
struct Keys {
    /// Options with a value: `key=value` → `--key=value` (`_` → `-`).
    values: Vec<String>,
    /// Switches: `key=1`/`true` → `--key`; `0`/`false` → nothing.
    switches: Vec<String>,
    /// Whether the command takes MODELs (and a config as the body).
    models: bool,
}

/// The commands the API answers.
const COMMANDS: &[&str] = &[
    "params", "memory", "flops", "train", "design", "presets", "gpus",
];

/// A command's keys, from its clap declaration less [`CLI_ONLY`].
fn keys_from(command: &clap::Command) -> Keys {
    let mut keys = Keys::default();
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else {
            keys.models |= arg.is_positional();
            continue;
        };
        let key = long.replace('-', "_");
        if CLI_ONLY.iter().any(|(k, _)| *k == key) {
            continue;
        }
        if arg.get_action().takes_values() {
            keys.values.push(key);
        } else {
            keys.switches.push(key);
        }
    }
    keys
}

/// The commands the API answers, by the last part of their path.
fn keys_of(command: &str) -> Option<&'static Keys> {
    use clap::CommandFactory as _;
    static KEYS: std::sync::OnceLock<Vec<(&'static str, Keys)>> = std::sync::OnceLock::new();
    let all = KEYS.get_or_init(|| {
        let cli = Cli::command();
        COMMANDS
            .iter()
            .filter_map(|name| Some((*name, keys_from(cli.find_subcommand(name)?))))
            .collect()
    });
    all.iter()
        .find(|(name, _)| *name == command)
        .map(|(_, k)| k)
}

/// A refused request: its status and the text of the answer.
#[derive(Debug)]
pub(crate) struct Refusal {
    status: StatusCode,
    text: String,
}

impl Refusal {
    fn bad(message: impl std::fmt::Display, hint: impl std::fmt::Display) -> Self {
        Refusal {
            status: StatusCode::BAD_REQUEST,
            text: format!("error: {message}\n\nhint: {hint}\n"),
        }
    }
}

/// A request, as the command line that asks the same question.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Question {
    /// `llmsize <command> … --json -- MODEL…`.
    pub(crate) argv: Vec<String>,
    /// The format asked for (`json` unless `format=` says otherwise).
    pub(crate) format: String,
}

/// `/api/<command>?<query>` with an optional body → the argument list.
pub(crate) fn question(
    command: &str,
    query: Option<&str>,
    body: &[u8],
) -> Result<Question, Refusal> {
    let Some(keys) = keys_of(command) else {
        return Err(Refusal {
            status: StatusCode::NOT_FOUND,
            text: format!(
                "error: no API `/api/{command}`\n\nhint: the API answers {}\n",
                COMMANDS.join(", ")
            ),
        });
    };
    let mut options = Vec::new();
    let mut models = Vec::new();
    let mut format = "json".to_owned();
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        let (key, value) = (key.as_ref(), value.into_owned());
        let key = ALIASES
            .iter()
            .find(|(alias, k)| *alias == key && keys.values.iter().any(|v| v == k))
            .map_or(key, |(_, k)| *k);
        match key {
            "format" => format = value,
            "model" if keys.models => models.push(check_model(&value)?),
            // The model a design keeps the structure of: a preset or a config's text, as
            // any MODEL of a request, never a path.
            "like" if command == "design" => {
                options.push(format!("--like={}", check_model(&value)?));
            }
            "config" if keys.models => models.push(check_config(&value)?),
            _ if keys.values.iter().any(|k| k == key) => {
                options.push(format!("--{}={value}", key.replace('_', "-")));
            }
            _ if keys.switches.iter().any(|k| k == key) => {
                if switch(key, &value)? {
                    options.push(format!("--{}", key.replace('_', "-")));
                }
            }
            _ => {
                let mut known: Vec<&str> = Vec::new();
                if keys.models {
                    known.extend(["model", "config"]);
                }
                known.extend(keys.values.iter().chain(&keys.switches).map(String::as_str));
                known.push("format");
                return Err(Refusal::bad(
                    format!("unknown query key `{key}` for /api/{command}"),
                    format!("known keys: {}", known.join(", ")),
                ));
            }
        }
    }
    if !body.is_empty() {
        if !keys.models {
            return Err(Refusal::bad(
                format!("/api/{command} takes no body"),
                "ask with GET and the options in the query string",
            ));
        }
        let text = std::str::from_utf8(body).map_err(|_| {
            Refusal::bad(
                "the body is not UTF-8 text",
                "POST the text of a config.json as the body",
            )
        })?;
        models.push(check_config(text)?);
    }
    let mut argv = vec!["llmsize".to_owned(), command.to_owned()];
    argv.extend(options);
    if format == "json" {
        argv.push("--json".to_owned());
    } else {
        argv.push(format!("--format={format}"));
    }
    if !models.is_empty() {
        argv.push("--".to_owned());
        argv.extend(models);
    }
    Ok(Question { argv, format })
}

/// `1`/`true`/`on`/`yes`/empty switch the flag on; `0`/`false`/`off`/`no` leave it off.
fn switch(key: &str, value: &str) -> Result<bool, Refusal> {
    match value.to_ascii_lowercase().as_str() {
        "" | "1" | "true" | "on" | "yes" => Ok(true),
        "0" | "false" | "off" | "no" => Ok(false),
        _ => Err(Refusal::bad(
            format!("`{key}={value}`: `{key}` is a switch"),
            format!("`{key}=1` turns it on, `{key}=0` (or leaving it out) off"),
        )),
    }
}

/// A config's text (the `config` key or the body): a JSON object, which the engine reads as
/// the config itself, never as a name.
fn check_config(text: &str) -> Result<String, Refusal> {
    if text.trim_start().starts_with('{') {
        Ok(text.to_owned())
    } else {
        Err(Refusal::bad(
            "a config must be the text of a config.json (a JSON object)",
            "paste the whole file, from `{` to `}`",
        ))
    }
}

/// A MODEL named in a query: a preset's name, a Hub id of a preset, or a config's text.
///
/// The server reads no file a client names: anything that looks like a path (a separator,
/// `..`, `~`, a leading `.`, an extension llmsize reads, `org/name:FILE`) or names something
/// that exists relative to the server's working directory is refused here, before the
/// engine sees it. A Hub id (`meta-llama/Llama-2-7b-hf`, one `/`) is accepted only when it
/// is a preset's, and is passed on as the preset's own name, never as the id (which could
/// also be a relative path).
pub(crate) fn check_model(name: &str) -> Result<String, Refusal> {
    if name.trim_start().starts_with('{') {
        return check_config(name);
    }
    let refuse = || {
        Refusal::bad(
            format!("`{name}` looks like a path, and the server reads no files a request names"),
            "name a preset (`llmsize presets`), or POST the text of the config.json as the body",
        )
    };
    let lower = name.to_ascii_lowercase();
    let pathlike = name.trim().is_empty()
        || name.contains(['\\', ':', '~', '\0'])
        || name.contains("..")
        || name.starts_with('.')
        || [".json", ".gguf", ".safetensors"]
            .iter()
            .any(|ext| lower.ends_with(ext));
    if pathlike {
        return Err(refuse());
    }
    if let Some((org, repo)) = name.split_once('/') {
        if org.is_empty() || repo.is_empty() || repo.contains('/') {
            return Err(refuse());
        }
        // `meta-llama/Llama-3.1-8B-Instruct`: a tuned release, named as the CLI names it.
        if let Some(preset) = llmsize_engine::preset_for_repo_id(name) {
            return Ok(preset);
        }
        return Err(Refusal::bad(
            format!("`{name}` is not the Hub id of a built-in preset"),
            "the server answers presets and pasted configs only; `llmsize presets` lists them",
        ));
    }
    if Path::new(name).exists() {
        return Err(refuse());
    }
    Ok(name.to_owned())
}

/// Content type of an answer in `format`.
fn content_type(format: &str) -> &'static str {
    match format {
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "markdown" => "text/markdown; charset=utf-8",
        "csv" => "text/csv; charset=utf-8",
        "mermaid" => "text/vnd.mermaid; charset=utf-8",
        _ => "text/plain; charset=utf-8",
    }
}

/// Run a question with the CLI's parser and command code.
pub(crate) fn answer(question: &Question, env: &Env) -> Response {
    let cli = match Cli::try_parse_from(&question.argv) {
        Ok(cli) => cli,
        Err(e) => return plain(StatusCode::BAD_REQUEST, e.render().to_string()),
    };
    if matches!(
        cli.command,
        Command::Serve(_) | Command::Completions(_) | Command::Man
    ) {
        return plain(StatusCode::NOT_FOUND, "error: not an API command\n".into());
    }
    match commands::run(&cli.command, env) {
        Ok(rendered) => {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(content_type(&question.format)),
            );
            let outcome = match rendered.outcome {
                Outcome::Success => "success",
                Outcome::No => "no",
            };
            headers.insert(OUTCOME, HeaderValue::from_static(outcome));
            for w in &rendered.warnings {
                // Percent-encoded: a header is ASCII, a warning need not be.
                let encoded: String = form_urlencoded::byte_serialize(w.as_bytes()).collect();
                if let Ok(v) = HeaderValue::from_str(&encoded) {
                    headers.append(WARNING, v);
                }
            }
            (StatusCode::OK, headers, rendered.text).into_response()
        }
        Err(failure @ (crate::Failure::Engine(_) | crate::Failure::Usage(_))) => {
            plain(StatusCode::BAD_REQUEST, crate::output::error_text(&failure))
        }
        Err(failure @ crate::Failure::Output(_)) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            crate::output::error_text(&failure),
        ),
    }
}

/// `X-Llmsize-Outcome: success | no`: the exit status the CLI would have had (0 or 1). A
/// "does not fit" is an answer, so it is 200 with the verdict in the JSON and here.
const OUTCOME: HeaderName = HeaderName::from_static("x-llmsize-outcome");

/// `X-Llmsize-Warning`, one per warning the CLI prints on stderr (percent-encoded UTF-8,
/// `+` for a space): stderr is not the data, so neither is the body.
const WARNING: HeaderName = HeaderName::from_static("x-llmsize-warning");

/// `GET|POST /api/<command>`.
pub(crate) async fn handle(
    State(shared): State<Arc<Shared>>,
    UrlPath(command): UrlPath<String>,
    method: Method,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    if method == Method::GET && !body.is_empty() {
        return plain(
            StatusCode::BAD_REQUEST,
            "error: a GET request takes no body\n\nhint: POST a config's text\n".into(),
        );
    }
    let question = match question(&command, query.as_deref(), &body) {
        Ok(q) => q,
        Err(r) => return plain(r.status, r.text),
    };
    let env = shared.env.clone();
    shared.pool.run(move || answer(&question, &env)).await
}

/// The largest file a header may say it comes from (a sparse stand-in takes no disk).
const MAX_FILE: u64 = 1 << 44;

/// A weight file's header, as the page sends it: a `.safetensors` file's first 8 bytes (the
/// header's length, little-endian) and the JSON header, nothing else. Anything that is not
/// exactly that is refused; the engine reads it from a stand-in file in a private temporary
/// directory, as long as the original (`size`) with no tensor data (a sparse file).
pub(crate) fn header_file(query: Option<&str>, body: &[u8]) -> Result<tempfile::TempDir, Refusal> {
    let not_header = |why: &str| {
        Refusal::bad(
            format!("the body is not a .safetensors header: {why}"),
            "send the file's first 8 bytes and the JSON header they announce, nothing more",
        )
    };
    let mut name = "model.safetensors".to_owned();
    let mut size = None;
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match key.as_ref() {
            "name" => name = value.into_owned(),
            "size" => {
                size = Some(value.parse::<u64>().map_err(|_| {
                    Refusal::bad(
                        format!("`size={value}` is not a number of bytes"),
                        "size is the whole file's length in bytes",
                    )
                })?);
            }
            other => {
                return Err(Refusal::bad(
                    format!("unknown query key `{other}` for /api/inspect"),
                    "known keys: name, size",
                ));
            }
        }
    }
    let (len, rest) = body
        .split_first_chunk::<8>()
        .ok_or_else(|| not_header("shorter than 8 bytes"))?;
    let len = u64::from_le_bytes(*len);
    if usize::try_from(len).ok() != Some(rest.len()) {
        return Err(not_header(&format!(
            "its first 8 bytes announce {len} bytes of header, and {} follow",
            rest.len()
        )));
    }
    if rest.first() != Some(&b'{') {
        return Err(not_header("the header is not a JSON object"));
    }
    let body_len = u64::try_from(body.len()).unwrap_or(u64::MAX);
    let size = size.unwrap_or(body_len);
    if size < body_len || size > MAX_FILE {
        return Err(Refusal::bad(
            format!("`size={size}` cannot be the length of a file with a {body_len}-byte header"),
            "size is the whole file's length in bytes, at most 16 TiB",
        ));
    }
    // Only the file's own name, in characters any file system takes.
    let base: String = name
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or("")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let base = if base.starts_with('.') || !base.ends_with(".safetensors") || base.len() > 200 {
        "model.safetensors".to_owned()
    } else {
        base
    };
    let internal = |e: std::io::Error| Refusal {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        text: format!("error: cannot write the header to a temporary file: {e}\n"),
    };
    let dir = tempfile::Builder::new()
        .prefix("llmsize-serve-")
        .tempdir()
        .map_err(internal)?;
    let file = std::fs::File::create(dir.path().join(&base)).map_err(internal)?;
    std::io::Write::write_all(&mut &file, body).map_err(internal)?;
    file.set_len(size).map_err(internal)?;
    Ok(dir)
}

/// `POST /api/inspect?name=…&size=…` with a `.safetensors` header as the body: `llmsize
/// inspect --json` of a file with that header.
pub(crate) async fn inspect(
    State(shared): State<Arc<Shared>>,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let env = shared.env.clone();
    let work = move || {
        let dir = match header_file(query.as_deref(), &body) {
            Ok(dir) => dir,
            Err(r) => return plain(r.status, r.text),
        };
        let Some(path) = std::fs::read_dir(dir.path())
            .ok()
            .and_then(|mut d| d.next())
            .and_then(Result::ok)
            .map(|e| e.path().to_string_lossy().into_owned())
        else {
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "error: the header file vanished\n".into(),
            );
        };
        let question = Question {
            argv: ["llmsize", "inspect", "--json", "--", &path]
                .map(str::to_owned)
                .to_vec(),
            format: "json".into(),
        };
        answer(&question, &env)
    };
    shared.pool.run(work).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(command: &str, query: &str) -> Vec<String> {
        question(command, Some(query), b"").unwrap().argv
    }

    #[test]
    fn a_query_becomes_the_command_line() {
        assert_eq!(
            argv(
                "memory",
                "model=llama-2-7b&gpu=h100&seq=8192&batch=1&dtype=q4_k_m&kv_dtype=fp8"
            ),
            [
                "llmsize",
                "memory",
                "--gpu=h100",
                "--seq-len=8192",
                "--batch=1",
                "--dtype=q4_k_m",
                "--kv-dtype=fp8",
                "--json",
                "--",
                "llama-2-7b"
            ]
        );
        assert_eq!(
            argv("params", "model=gpt2&text_only=1&format=csv"),
            [
                "llmsize",
                "params",
                "--text-only",
                "--format=csv",
                "--",
                "gpt2"
            ]
        );
        // A value that looks like a flag stays the value of its own flag.
        assert_eq!(
            argv("memory", "model=gpt2&dtype=--online"),
            [
                "llmsize",
                "memory",
                "--dtype=--online",
                "--json",
                "--",
                "gpt2"
            ]
        );
    }

    /// Every option of every command the API answers is a key, or [`CLI_ONLY`] says why
    /// not; and every reason there names an option some command has (none is stale).
    #[test]
    fn every_cli_option_is_a_key_or_says_why_not() {
        use clap::CommandFactory as _;
        let cli = Cli::command();
        let mut seen = std::collections::BTreeSet::new();
        for name in COMMANDS {
            let command = cli.find_subcommand(name).unwrap();
            let keys = keys_of(name).unwrap();
            for arg in command.get_arguments() {
                let Some(long) = arg.get_long() else { continue };
                let key = long.replace('-', "_");
                let taken = keys.values.contains(&key) || keys.switches.contains(&key);
                let why = CLI_ONLY.iter().find(|(k, _)| *k == key);
                assert!(
                    taken != why.is_some(),
                    "`{name} --{long}`: a key and CLI-only, or neither"
                );
                seen.insert(key);
            }
        }
        for (key, _) in CLI_ONLY {
            assert!(
                seen.contains(*key) || ["help", "version"].contains(key),
                "CLI_ONLY names `{key}`, an option of no API command"
            );
        }
    }

    /// `design --train-memory` and the training flags it takes: once missing from the API.
    #[test]
    fn design_takes_train_memory_and_its_flags() {
        assert_eq!(
            argv(
                "design",
                "train_memory=h100&batch=2&precision=mixed&optimizer=adamw-8bit&checkpointing=1&lora_rank=16&qlora=1&zero=2&dp=4"
            ),
            [
                "llmsize",
                "design",
                "--train-memory=h100",
                "--batch=2",
                "--precision=mixed",
                "--optimizer=adamw-8bit",
                "--checkpointing",
                "--lora-rank=16",
                "--qlora",
                "--zero=2",
                "--dp=4",
                "--json"
            ]
        );
        // `explain` is a switch of `params`; `seq` the API's short name for `seq_len`, only
        // where the command has one.
        assert_eq!(
            argv("params", "model=gpt2&explain=1&format=table"),
            [
                "llmsize",
                "params",
                "--explain",
                "--format=table",
                "--",
                "gpt2"
            ]
        );
        let refused = question("params", Some("model=gpt2&seq=8"), b"").unwrap_err();
        assert!(
            refused.text.contains("unknown query key `seq`"),
            "{}",
            refused.text
        );
        for key in ["online", "file", "revision", "jobs", "deadline"] {
            let refused =
                question("memory", Some(&format!("model=gpt2&{key}=1")), b"").unwrap_err();
            assert!(
                refused.text.contains(&format!("unknown query key `{key}`")),
                "{key}"
            );
        }
    }

    #[test]
    fn a_hub_id_of_a_preset_becomes_its_name() {
        assert_eq!(
            check_model("meta-llama/Llama-2-7b-hf").unwrap(),
            "Llama-2-7b-hf"
        );
    }

    #[test]
    fn paths_are_refused() {
        for name in [
            "/etc/passwd",
            "../x",
            "~/m",
            ".",
            "a/b/c",
            "config.json",
            "m.gguf",
            "C:\\m",
            "org/name:model.gguf",
            "Cargo.toml",
            "src",
            "",
        ] {
            let r = check_model(name).unwrap_err();
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "{name}");
        }
    }

    #[test]
    fn a_header_is_written_under_its_own_name_only() {
        let json = br#"{"__metadata__":{}}"#;
        let mut body = (json.len() as u64).to_le_bytes().to_vec();
        body.extend_from_slice(json);
        for (name, kept) in [
            ("..%2F..%2Fetc%2Fx.safetensors", "x.safetensors"),
            ("C%3A%5Cm%5Cy.safetensors", "y.safetensors"),
            (".hidden.safetensors", "model.safetensors"),
            ("weights.bin", "model.safetensors"),
            ("a%20b.safetensors", "a_b.safetensors"),
        ] {
            let dir = header_file(Some(&format!("name={name}&size=100")), &body).unwrap();
            let files: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap())
                .collect();
            assert_eq!(files.len(), 1);
            assert_eq!(files[0].file_name().to_str().unwrap(), kept, "{name}");
            assert_eq!(files[0].metadata().unwrap().len(), 100);
        }
    }
}
