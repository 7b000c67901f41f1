//! `llmsize design`: every printed candidate is exact (its config, and its command, count to
//! its total through the binary), real models are found at their own size, compute-optimal
//! sizes, memory targets, and the exit codes of impossible and malformed constraints.

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

    fn json(args: &[&str]) -> Value {
        let mut all = vec!["design"];
        all.extend_from_slice(args);
        all.push("--json");
        let run = llmsize(&all);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        serde_json::from_str(&run.stdout).unwrap()
    }

    fn total_of(args: &[&str]) -> u64 {
        let run = llmsize(args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        let v: Value = serde_json::from_str(&run.stdout).unwrap();
        v["total"].as_u64().unwrap()
    }

    /// Every candidate: its `config` (as JSON text, a MODEL) and its `command` count to its
    /// `total` through the binary; the config has a `model_type`.
    fn check_exact(out: &Value) -> usize {
        let candidates = out["candidates"].as_array().unwrap();
        for c in candidates {
            let total = c["total"].as_u64().unwrap();
            assert!(c["config"]["model_type"].is_string(), "{c}");
            let config = c["config"].to_string();
            assert_eq!(total_of(&["params", &config, "--json"]), total, "{config}");
            let words = shell_words(c["command"].as_str().unwrap());
            assert_eq!(words[..2], ["llmsize", "params"], "{words:?}");
            let mut args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
            args.push("--json");
            assert_eq!(total_of(&args), total, "{}", c["command"]);
        }
        candidates.len()
    }

    #[test]
    fn every_candidate_counts_to_its_total_through_the_binary() {
        // Many targets over the three styles and several real models; 3 candidates each.
        let cases: &[&[&str]] = &[
            &["--style", "llama", "--params", "125M"],
            &[
                "--style",
                "llama",
                "--params",
                "1.5B",
                "--head-dim",
                "64,128",
            ],
            &["--style", "llama", "--params", "7B", "--gqa-group", "4,8"],
            &[
                "--style",
                "llama",
                "--params",
                "70B",
                "--kv-heads",
                "8",
                "--tp",
                "8",
            ],
            &["--style", "gpt", "--params", "350M"],
            &["--style", "gpt", "--params", "2.7B", "--non-embedding"],
            &[
                "--style",
                "moe",
                "--params",
                "13B",
                "--experts",
                "16",
                "--top-k",
                "2",
            ],
            &["--style", "moe", "--params", "2B", "--active"],
            &["--like", "Qwen2.5-0.5B", "--params", "3B"],
            &["--like", "gpt2", "--params", "1B"],
            &["--like", "Llama-2-7b-hf", "--params", "13B", "--pp", "4"],
            &[
                "--like",
                "Mistral-7B-v0.1",
                "--params",
                "12B",
                "--vocab",
                "131072",
            ],
            &["--like", "Qwen3-8B", "--params", "4B"],
        ];
        let mut checked = 0;
        for case in cases {
            let mut args = case.to_vec();
            args.extend(["--top", "3"]);
            let out = json(&args);
            assert!(out["evaluated"].as_u64().unwrap() > 0, "{case:?}");
            let n = check_exact(&out);
            assert!(n >= 1, "{case:?}: no candidate");
            checked += n;
        }
        // 11 cases give 3; 125M llama-style and 2B active MoE-style have one shape each within
        // 1% at head width 128.
        assert_eq!(checked, 35);
    }

    /// The real shape among the top 3 when searching like a model for its own size, given
    /// as `--params` or, with `params` empty, left for `--like` alone to take.
    fn finds_itself(like: &str, params: &str, shape: [u64; 6]) {
        let out = if params.is_empty() {
            json(&["--like", like, "--top", "5"])
        } else {
            json(&["--like", like, "--params", params, "--top", "5"])
        };
        let keys = [
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "intermediate_size",
            "vocab_size",
        ];
        let rank = out["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .position(|c| {
                keys.iter()
                    .zip(shape)
                    .all(|(k, v)| c["config"][*k].as_u64() == Some(v))
            })
            .unwrap_or_else(|| panic!("{like}: its shape is not among {out}"));
        assert!(rank < 3, "{like}: rank {rank}");
        check_exact(&out);
    }

    #[test]
    fn llama_3_8b_is_found_at_8_03b() {
        finds_itself("llama-3-8b", "8.03B", [4096, 32, 32, 8, 14336, 128_256]);
    }

    #[test]
    fn qwen2_5_7b_is_found_at_its_own_total() {
        // Its total is 7,615,616,512 (`llmsize params Qwen2.5-7B`).
        finds_itself("qwen2.5-7b", "7.62B", [3584, 28, 28, 4, 18944, 152_064]);
    }

    #[test]
    fn like_alone_searches_the_models_own_size() {
        // No target: Qwen2.5-7B's own 7,615,616,512 to three digits, 7.62B, as above.
        finds_itself("qwen2.5-7b", "", [3584, 28, 28, 4, 18944, 152_064]);
        let r = llmsize(&["design", "--like", "qwen2.5-7b", "--top", "1"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(
            r.stderr
                .contains("no target given: Qwen2.5-7B's own size, 7.62B"),
            "{}",
            r.stderr
        );
        assert!(
            r.stdout
                .starts_with("Design: Qwen2.5-7B shapes, 7.62B total parameters (its own size)"),
            "{}",
            r.stdout
        );
        // A style has no size of its own: a target is needed (exit 2, saying which).
        let r = llmsize(&["design", "--style", "llama"]);
        assert_eq!(r.code, 2);
        assert!(r.stderr.contains("needs a target"), "{}", r.stderr);
    }

    #[test]
    fn mixtral_8x7b_is_found_at_its_own_total() {
        // Its total is 46,702,792,704.
        finds_itself("mixtral-8x7b", "46.7B", [4096, 32, 32, 8, 14336, 32_000]);
    }

    #[test]
    fn compute_at_chinchilla_gives_70b_by_the_20_tokens_rule() {
        // C = 6 · 70e9 · 1.4e12 = 5.88e23: √(C/120) = 7e10 parameters, 1.4e12 tokens.
        let out = json(&["--compute", "5.88e23", "--fit", "tokens20", "--top", "3"]);
        assert_eq!(out["target"], 70_000_000_000_u64);
        let rows = out["compute_optimal"].as_array().unwrap();
        let by = |rule: &str| rows.iter().find(|r| r["rule"] == rule).unwrap();
        let t = by("tokens20");
        assert!((t["params"].as_f64().unwrap() - 7e10).abs() < 1.0);
        assert!((t["tokens"].as_f64().unwrap() - 1.4e12).abs() < 20.0);
        // Approach 3 with the published constants: 3.2491e10 (worked in llmsize-design's
        // `optimal` tests), smaller than Chinchilla's 70B; Epoch's fit: 7.3016e10.
        let h = by("hoffmann")["params"].as_f64().unwrap();
        assert!((h / 3.2491e10 - 1.0).abs() < 1e-4, "{h}");
        let e = by("epoch")["params"].as_f64().unwrap();
        assert!((e / 7.3016e10 - 1.0).abs() < 1e-4, "{e}");
        // Every shape within 1% of 70B, and exact.
        for c in out["candidates"].as_array().unwrap() {
            let total = c["total"].as_f64().unwrap();
            assert!((total / 7e10 - 1.0).abs() <= 0.01, "{total}");
        }
        assert_eq!(check_exact(&out), 3);
    }

    #[test]
    fn kv_cache_and_flops_per_token_are_what_memory_and_flops_say() {
        // Each candidate's KV/token and GF/token columns: `llmsize memory` and `llmsize
        // flops` of its own config at the design's context (4,096 by default), through the
        // binary; and the KV cache by hand, bf16 K and V of every layer: 2·L·kv·head_dim·2 B.
        let out = json(&["--like", "llama-3-8b", "--params", "8.03B", "--top", "3"]);
        let candidates = out["candidates"].as_array().unwrap();
        assert_eq!(candidates.len(), 3);
        for c in candidates {
            let config = c["config"].to_string();
            let cfg = &c["config"];
            let by_hand = 2
                * cfg["num_hidden_layers"].as_u64().unwrap()
                * cfg["num_key_value_heads"].as_u64().unwrap()
                * (cfg["hidden_size"].as_u64().unwrap()
                    / cfg["num_attention_heads"].as_u64().unwrap())
                * 2;
            assert_eq!(c["kv_bytes_per_token"].as_u64(), Some(by_hand), "{cfg}");
            let memory: Value = serde_json::from_str(
                &llmsize(&["memory", &config, "--seq-len", "4096", "--json"]).stdout,
            )
            .unwrap();
            assert_eq!(c["kv_bytes_per_token"], memory["kv_cache_bytes_per_token"]);
            let flops: Value = serde_json::from_str(
                &llmsize(&["flops", &config, "--seq-len", "4096", "--json"]).stdout,
            )
            .unwrap();
            assert_eq!(c["flops_per_token"], flops["per_token_flops"], "{cfg}");
        }
        // Llama-3-8B's own: 2·32·8·128·2 = 131,072 B a token.
        assert_eq!(candidates[0]["kv_bytes_per_token"], 131_072);
    }

    #[test]
    fn memory_target_gives_models_that_fit_as_llmsize_memory_measures_them() {
        let budget = 24u64 << 30;
        let out = json(&[
            "--like",
            "Meta-Llama-3-8B",
            "--memory",
            "24GiB",
            "--dtype",
            "q4_k_m",
            "--ctx",
            "32k",
            "--top",
            "3",
        ]);
        let candidates = out["candidates"].as_array().unwrap();
        assert_eq!(candidates.len(), 3);
        let mut largest = 0;
        for c in candidates {
            let bytes = c["memory_bytes"].as_u64().unwrap();
            assert!(bytes <= budget, "{bytes}");
            // The same weights and KV cache as `llmsize memory` says.
            let config = c["config"].to_string();
            let run = llmsize(&[
                "memory",
                &config,
                "--dtype",
                "q4_k_m",
                "--seq-len",
                "32k",
                "--json",
            ]);
            assert_eq!(run.code, 0, "{}", run.stderr);
            let m: Value = serde_json::from_str(&run.stdout).unwrap();
            assert_eq!(
                m["weights_bytes"].as_u64().unwrap() + m["kv_cache_bytes"].as_u64().unwrap(),
                bytes
            );
            largest = largest.max(c["total"].as_u64().unwrap());
        }
        // Larger than the 8B model itself: 24 GiB holds about 27B parameters at q4_k_m.
        assert!(largest > 20_000_000_000, "{largest}");
        check_exact(&out);
    }

    #[test]
    fn impossible_constraints_exit_1_naming_what_to_relax() {
        // 3 KV heads cannot be split over 8 GPUs, nor 8 over 3.
        let run = llmsize(&[
            "design",
            "--style",
            "llama",
            "--params",
            "7B",
            "--tp",
            "8",
            "--kv-heads",
            "3",
        ]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(run.stdout.contains("--tp 8"), "{}", run.stdout);
        assert!(run.stdout.contains("--kv-heads 3"), "{}", run.stdout);
        // A tolerance of 0 around a count no shape has: relax the tolerance.
        let run = llmsize(&[
            "design",
            "--style",
            "llama",
            "--params",
            "7000000001",
            "--tolerance",
            "0%",
            "--json",
        ]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        let v: Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(v["candidates"].as_array().unwrap().len(), 0);
        assert!(
            v["relax"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r == "--tolerance"),
            "{v}"
        );
        assert!(run.stderr.contains("relax"), "{}", run.stderr);
    }

    #[test]
    fn targets_outside_the_space_say_so() {
        // 10T is beyond d ≤ 32,768 and L ≤ 256: widening either range gives shapes.
        let run = llmsize(&["design", "--params", "10T"]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stdout.contains("--hidden-range 64..32768"),
            "{}",
            run.stdout
        );
        // One parameter is below the smallest LLaMA-style shape: d = 128 (one head of 128),
        // f = ⌈341/256⌉·256 = 512, L = 1: 2·128² + 2·128·128 + 3·128·512 + 2·128 = 262,400,
        // plus 2·32,000·128 + 128 = 8,192,128: 8,454,528 (8.45M).
        let run = llmsize(&["design", "--params", "1"]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(run.stdout.contains("spans 8.45M to"), "{}", run.stdout);
    }

    #[test]
    fn malformed_values_exit_2() {
        for args in [
            &["design", "--params", "7X"][..],
            &["design", "--params", "7B", "--tolerance", "80%"],
            &["design", "--params", "7B", "--ffn-rule", "5e"],
            &["design", "--params", "7B", "--aspect", "200..20"],
            &["design", "--params", "7B", "--head-dim", "0"],
            &["design", "--compute", "ten"],
            &[
                "design", "--params", "7B", "--like", "gpt2", "--style", "llama",
            ],
            &["design", "--params", "7B", "--active"],
            &["design", "--style", "llama"],
            &[
                "design",
                "--params",
                "7B",
                "--like",
                "no-such-model-anywhere",
            ],
            &["design", "--params", "7B", "--like", "bert-base-uncased"],
            &["design", "--memory", "24GiB", "--ctx", "1000000000"],
        ] {
            let run = llmsize(args);
            assert_eq!(run.code, 2, "{args:?}: {}{}", run.stdout, run.stderr);
            assert!(run.stderr.contains("error"), "{args:?}: {}", run.stderr);
        }
    }

    #[test]
    fn tables_fit_80_columns() {
        for args in [
            &["design", "--like", "llama-3-8b", "--params", "8.03B"][..],
            &["design", "--compute", "1e23", "--top", "3"],
            &[
                "design",
                "--like",
                "Meta-Llama-3-8B",
                "--memory",
                "24GiB",
                "--dtype",
                "q4_k_m",
            ],
        ] {
            let run = llmsize_env(args, &[("COLUMNS", "80")]);
            assert_eq!(run.code, 0, "{}", run.stderr);
            for line in run.stdout.lines() {
                assert!(line.chars().count() <= 80, "{args:?}: {line}");
            }
        }
    }

    #[test]
    fn markdown_and_csv_carry_the_candidates() {
        let md = llmsize(&[
            "design", "--params", "1B", "--top", "2", "--format", "markdown",
        ]);
        assert_eq!(md.code, 0);
        assert!(md.stdout.contains("| # |"), "{}", md.stdout);
        let csv = llmsize(&["design", "--params", "1B", "--top", "2", "--format", "csv"]);
        assert_eq!(csv.code, 0);
        assert!(csv.stdout.lines().next().unwrap().starts_with("section,"));
        assert!(csv.stdout.contains("candidates,"), "{}", csv.stdout);
    }
}
