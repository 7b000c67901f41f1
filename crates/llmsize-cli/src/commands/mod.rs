//! One module per subcommand.

pub(crate) mod flops;
pub(crate) mod inspect;
pub(crate) mod memory;
pub(crate) mod params;
pub(crate) mod presets;
