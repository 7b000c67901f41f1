//! One module per subcommand: flags → an engine request, the outcome → text and a status.

pub(crate) mod flops;
pub(crate) mod inspect;
pub(crate) mod memory;
pub(crate) mod params;
pub(crate) mod presets;
pub(crate) mod train;

use llmsize_engine::{Engine, HubEnv, HubOptions};

use crate::cli::HubArgs;

/// The engine, resolving Hub repo ids with this process's Hugging Face variables, and
/// drawing `--online`'s progress on stderr.
pub(crate) fn engine() -> Engine {
    let mut env = HubEnv::from_vars(|k| std::env::var_os(k));
    env.progress = Some(crate::output::fetch_progress());
    Engine::new(env)
}

pub(crate) fn hub(args: &HubArgs) -> HubOptions {
    HubOptions {
        online: args.online,
        revision: args.revision.clone(),
        file: args.file.clone(),
        timeout: args.timeout,
        jobs: usize::from(args.jobs),
    }
}
