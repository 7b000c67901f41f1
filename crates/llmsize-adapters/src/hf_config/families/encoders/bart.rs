//! (bart-like decoders: to come)
