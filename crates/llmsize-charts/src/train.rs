//! todo
/// todo
pub fn train_svg() {}
