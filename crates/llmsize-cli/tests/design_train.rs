//! `llmsize design --train-memory`: every printed candidate's training bytes are what
//! `llmsize train` gives for its config with the same options (through the binary), each
//! within the budget; the first is the largest printed, and one more layer of it does not
//! fit; what a budget too small for any shape says, and the exit codes.

mod common;

#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "a test fails loudly on what it did not expect"
)]
mod tests {
    use serde_json::Value;

    use super::common::{llmsize, llmsize_env, shell_words};

    const GIB: u64 = 1 << 30;

    fn design(args: &[&str]) -> Value {
        let mut all = vec!["design"];
        all.extend_from_slice(args);
        all.push("--json");
        let run = llmsize(&all);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        serde_json::from_str(&run.stdout).unwrap()
    }

    /// `llmsize train CONFIG FLAGS --json`: the most loaded GPU's bytes.
    fn train_bytes(config: &str, flags: &[&str]) -> u64 {
        let mut all = vec!["train", config];
        all.extend_from_slice(flags);
        all.push("--json");
        let run = llmsize(&all);
        assert_eq!(run.code, 0, "{flags:?}: {}", run.stderr);
        let v: Value = serde_json::from_str(&run.stdout).unwrap();
        v["per_gpu_bytes"].as_u64().unwrap()
    }

    /// The design's flags → the same step's `llmsize train` flags (`--ctx` is `--seq-len`;
    /// the others are spelled alike).
    fn train_flags<'a>(design_flags: &[&'a str]) -> Vec<&'a str> {
        design_flags
            .iter()
            .map(|f| if *f == "--ctx" { "--seq-len" } else { *f })
            .collect()
    }

    /// Design for `budget` bytes under `flags`, then check every candidate through `train`.
    /// Returns the candidates' totals, in order.
    fn check(like: &str, budget: u64, flags: &[&str], top: &str) -> Vec<u64> {
        let b = format!("{budget}B");
        let mut args = vec!["--like", like, "--train-memory", &b, "--top", top];
        args.extend_from_slice(flags);
        let out = design(&args);
        assert!(out["evaluated"].as_u64().unwrap() > 1000, "{out}");
        let tflags = train_flags(flags);
        let candidates = out["candidates"].as_array().unwrap();
        assert!(!candidates.is_empty(), "{args:?}");
        let mut totals = Vec::new();
        for c in candidates {
            let config = c["config"].to_string();
            let bytes = c["train_bytes_per_gpu"].as_u64().unwrap();
            assert!(bytes <= budget, "{bytes} > {budget}: {config}");
            assert_eq!(train_bytes(&config, &tflags), bytes, "{args:?} {config}");
            assert!(
                c["command"]
                    .as_str()
                    .unwrap()
                    .starts_with("llmsize params ")
            );
            // The printed `llmsize train` command measures the same bytes.
            let words = shell_words(c["train_command"].as_str().unwrap());
            assert_eq!(words[..2], ["llmsize", "train"], "{words:?}");
            let printed: Vec<&str> = words[3..].iter().map(String::as_str).collect();
            assert_eq!(train_bytes(&words[2], &printed), bytes, "{words:?}");
            totals.push(c["total"].as_u64().unwrap());
        }
        // The first is the largest printed …
        assert!(
            totals.iter().skip(1).all(|t| *t < totals[0]),
            "{args:?}: {totals:?}"
        );
        // … and one more layer of it no longer trains within the budget.
        let mut deeper = candidates[0]["config"].clone();
        let key = ["num_hidden_layers", "n_layer"]
            .into_iter()
            .find(|k| deeper[*k].is_u64())
            .unwrap();
        let layers = deeper[key].as_u64().unwrap();
        deeper[key] = Value::from(layers + 1);
        assert!(
            train_bytes(&deeper.to_string(), &tflags) > budget,
            "{args:?}: L + 1 fits too"
        );
        totals
    }

    #[test]
    fn full_fine_tuning_on_one_h100() {
        // `h100` is its memory as nvidia-smi reports it, 81,559 MiB: the same answer as the
        // size.
        let by_name = design(&[
            "--like",
            "Meta-Llama-3-8B",
            "--train-memory",
            "h100",
            "--top",
            "1",
        ]);
        let by_size = design(&[
            "--like",
            "Meta-Llama-3-8B",
            "--train-memory",
            "81559MiB",
            "--top",
            "1",
        ]);
        assert_eq!(by_name["candidates"], by_size["candidates"]);
        let totals = check("Meta-Llama-3-8B", 80_000_000_000, &[], "4");
        // Llama-3-8B itself (8,030,261,248 parameters) needs 80,099,205,648 bytes at 2k
        // tokens in pure bf16 AdamW (8 bytes per parameter, 64.2 GB, plus the step's
        // activations and logits): just over 80 GB. Wider, shallower shapes keep fewer
        // activations per parameter: the largest that fits 80 GB is larger than it.
        assert_eq!(train_bytes("Meta-Llama-3-8B", &[]), 80_099_205_648);
        assert!(totals[0] > 8_030_261_248, "{totals:?}");
        // 80 GiB (85.9 GB) trains a larger one still.
        let gib = check("Meta-Llama-3-8B", 80 * GIB, &[], "2");
        assert!(gib[0] > totals[0], "{gib:?} {totals:?}");
    }

    #[test]
    fn budgets_and_training_options() {
        check("Meta-Llama-3-8B", 24 * GIB, &["--checkpointing"], "3");
        // `--seq-len` is `--ctx` by `train`'s name.
        check(
            "Meta-Llama-3-8B",
            80 * GIB,
            &["--seq-len", "8192", "--checkpointing"],
            "2",
        );
        check("Meta-Llama-3-8B", 24 * GIB, &["--lora-rank", "16"], "3");
        check(
            "Meta-Llama-3-8B",
            16 * GIB,
            &["--lora-rank", "16", "--qlora", "--ctx", "4096"],
            "3",
        );
        check(
            "gpt2",
            8 * GIB,
            &["--precision", "mixed", "--batch", "4"],
            "3",
        );
        check(
            "Qwen2.5-7B",
            40 * GIB,
            &["--zero", "3", "--dp", "8", "--optimizer", "adamw-8bit"],
            "3",
        );
    }

    #[test]
    fn checkpointing_and_lora_train_larger_models() {
        let plain = check("Meta-Llama-3-8B", 40 * GIB, &[], "2")[0];
        let ckpt = check("Meta-Llama-3-8B", 40 * GIB, &["--checkpointing"], "2")[0];
        let lora = check("Meta-Llama-3-8B", 40 * GIB, &["--lora-rank", "16"], "2")[0];
        assert!(plain < ckpt && ckpt < lora, "{plain} {ckpt} {lora}");
    }

    #[test]
    fn a_style_prints_its_config_as_the_model_of_train() {
        // `--style llama` has no preset name: `train` reads the config's JSON text.
        let out = design(&[
            "--style",
            "llama",
            "--train-memory",
            "24GiB",
            "--precision",
            "mixed",
            "--top",
            "2",
        ]);
        for c in out["candidates"].as_array().unwrap() {
            let bytes = c["train_bytes_per_gpu"].as_u64().unwrap();
            assert!(bytes <= 24 * GIB);
            let words = shell_words(c["train_command"].as_str().unwrap());
            assert!(words[2].starts_with('{'), "{words:?}");
            assert_eq!(words[3..], ["--precision", "mixed"], "{words:?}");
            assert_eq!(train_bytes(&words[2], &["--precision", "mixed"]), bytes);
        }
    }

    #[test]
    fn a_budget_too_small_names_what_to_change() {
        // 3 GiB: the smallest Llama-3 shape (d = 512: 4 heads of 128 in groups of 4, one
        // layer) holds 128,256 × 512 × 2 embedding parameters at 8 bytes each plus 2048 ×
        // 128,256 logits: about 3.5 GiB. LoRA's 2-byte frozen base fits, so does a quarter
        // of the sequence; checkpointing does not (the logits stay).
        let run = llmsize_env(
            &[
                "design",
                "--like",
                "Meta-Llama-3-8B",
                "--train-memory",
                "3GiB",
            ],
            &[("COLUMNS", "80")],
        );
        assert_eq!(run.code, 1, "{}", run.stderr);
        let text = run.stdout.replace("\n    ", " ");
        assert!(text.contains("trains within the budget"), "{text}");
        assert!(text.contains("add --lora-rank 16"), "{text}");
        assert!(text.contains("shorten the sequence (--ctx 512)"), "{text}");
        assert!(!text.contains("--checkpointing"), "{text}");
        for line in run.stdout.lines() {
            assert!(line.chars().count() <= 80, "{line}");
        }
        // The changes it names do give shapes.
        check("Meta-Llama-3-8B", 3 * GIB, &["--lora-rank", "16"], "1");
        // 1 GiB: nothing tried helps.
        let run = llmsize(&[
            "design",
            "--like",
            "Meta-Llama-3-8B",
            "--train-memory",
            "1GiB",
            "--json",
        ]);
        assert_eq!(run.code, 1);
        assert!(run.stderr.contains("raise the budget"), "{}", run.stderr);
        let v: Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(v["candidates"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn zero_without_data_parallelism_warns() {
        let run = llmsize(&[
            "design",
            "--like",
            "gpt2",
            "--train-memory",
            "8GiB",
            "--zero",
            "2",
            "--top",
            "1",
            "--json",
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            run.stderr
                .contains("`--zero 2` over `--dp 1` shards nothing"),
            "{}",
            run.stderr
        );
    }

    #[test]
    fn malformed_values_exit_2() {
        for args in [
            &["--train-memory", "80"][..],
            &["--train-memory", "lots"],
            &["--train-memory", "0GiB"],
            &["--train-memory", "80GiB", "--precision", "half"],
            &["--train-memory", "80GiB", "--dtype", "q4_k_m"],
            &["--train-memory", "80GiB", "--zero", "4"],
            &["--train-memory", "80GiB", "--lora-rank", "0"],
            &["--train-memory", "80GiB", "--qlora"],
            &["--params", "8B", "--checkpointing"],
            &["--memory", "80GiB", "--lora-rank", "16"],
        ] {
            let mut all = vec!["design", "--like", "Meta-Llama-3-8B"];
            all.extend_from_slice(args);
            let run = llmsize(&all);
            assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
            assert!(!run.stderr.is_empty());
        }
    }

    #[test]
    fn the_table_fits_80_columns() {
        let run = llmsize_env(
            &[
                "design",
                "--like",
                "Meta-Llama-3-8B",
                "--train-memory",
                "80GiB",
                "--checkpointing",
                "--top",
                "3",
            ],
            &[("COLUMNS", "80")],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(run.stdout.contains("train/GPU"), "{}", run.stdout);
        assert!(
            run.stdout.contains("llmsize train Meta-Llama-3-8B"),
            "{}",
            run.stdout
        );
        assert!(run.stdout.contains("--checkpointing"), "{}", run.stdout);
        for line in run.stdout.lines() {
            assert!(line.chars().count() <= 80, "{line}");
        }
    }
}
