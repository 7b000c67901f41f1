//! One module per subcommand.

pub(crate) mod params;
pub(crate) mod presets;
