//! Parse the header of a `.safetensors` file and print what it holds and how long the parse
//! took: a way to measure the reader alone, e.g. peak memory with `/usr/bin/time -v`.
//!
//! ```text
//! cargo run --release -p llmsize-weights --example parse_safetensors -- model.safetensors
//! ```

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an example's output"
)]

use std::fs::File;
use std::io::Read as _;
use std::process::ExitCode;
use std::time::Instant;

use llmsize_weights::safetensors::{header_len, parse_header};

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: parse_safetensors FILE");
        return ExitCode::from(2);
    };
    match run(&path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut f = File::open(path)?;
    let file_len = f.metadata()?.len();
    let mut first = [0u8; 8];
    f.read_exact(&mut first)?;
    let n = header_len(&first, file_len, path)?;
    // One buffer of exactly 8 + N bytes, as the reader's protocol asks.
    let mut bytes = Vec::with_capacity(usize::try_from(8 + n)?);
    bytes.extend_from_slice(&first);
    f.take(n).read_to_end(&mut bytes)?;
    let start = Instant::now();
    let header = parse_header(&bytes, file_len, path)?;
    let elapsed = start.elapsed();
    println!(
        "{} tensors, {} elements, header {} bytes, parsed in {:.3} s",
        header.tensors.len(),
        header.total_elements,
        header.header_len,
        elapsed.as_secs_f64()
    );
    Ok(())
}
