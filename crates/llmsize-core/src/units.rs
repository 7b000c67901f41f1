//! How numbers are written for people. Machine formats (JSON) always carry plain integers.

/// `124439808` → `124,439,808`.
#[must_use]
pub fn thousands(n: u64) -> String {
    thousands_u128(u128::from(n))
}

/// A count with an SI-style suffix for parameters: `124.4M`, `6.74B`, `1.23T`.
///
/// Two decimals below 10 of the unit and one above, so that the figure keeps three or four
/// significant digits, the way model sizes are quoted.
#[must_use]
pub fn human_count(n: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1_000_000_000_000, "T"),
        (1_000_000_000, "B"),
        (1_000_000, "M"),
        (1_000, "K"),
    ];
    for (scale, suffix) in UNITS {
        if n >= scale {
            #[expect(clippy::cast_precision_loss, reason = "display only")]
            let v = n as f64 / scale as f64;
            return if v < 10.0 {
                format!("{v:.2}{suffix}")
            } else {
                format!("{v:.1}{suffix}")
            };
        }
    }
    n.to_string()
}

/// A signed relative difference in percent: `(estimate − exact) / exact`, e.g. `-4.39%`.
#[must_use]
pub fn relative(estimate: u64, exact: u64) -> String {
    if exact == 0 {
        return "n/a".into();
    }
    #[expect(clippy::cast_precision_loss, reason = "display only")]
    let r = (estimate as f64 - exact as f64) / exact as f64 * 100.0;
    format!("{r:+.2}%")
}

/// `part / whole` in percent with two decimals.
#[must_use]
pub fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "-".into();
    }
    #[expect(clippy::cast_precision_loss, reason = "display only")]
    let r = part as f64 / whole as f64 * 100.0;
    format!("{r:.2}%")
}

/// Bytes in the binary unit that keeps the number readable: `512 B`, `4.00 KiB`, `4.00 MiB`,
/// `12.55 GiB`, `1.20 TiB`. A table of GPU-sized numbers used to print anything under 5 MB as
/// "0.00 GiB"; a cache of 4 MiB is worth saying.
#[must_use]
pub fn human_bytes(n: u64) -> String {
    const UNITS: [(u32, &str); 5] = [
        (50, "PiB"),
        (40, "TiB"),
        (30, "GiB"),
        (20, "MiB"),
        (10, "KiB"),
    ];
    for (shift, unit) in UNITS {
        let scale = 1u64 << shift;
        if n >= scale {
            #[expect(clippy::cast_precision_loss, reason = "display only")]
            let v = n as f64 / scale as f64;
            return format!("{v:.2} {unit}");
        }
    }
    format!("{n} B")
}

/// Bytes as both binary and decimal units, labelled and scaled alike: `4.58 GiB (4.92 GB)`,
/// `4.00 MiB (4.19 MB)`, `512 B`.
#[must_use]
pub fn bytes_both(n: u64) -> String {
    const UNITS: [(u32, f64, &str); 4] = [
        (40, 1e12, "TB"),
        (30, 1e9, "GB"),
        (20, 1e6, "MB"),
        (10, 1e3, "kB"),
    ];
    for (shift, decimal, unit) in UNITS {
        if n >= 1u64 << shift {
            #[expect(clippy::cast_precision_loss, reason = "display only")]
            let d = n as f64 / decimal;
            return format!("{} ({d:.2} {unit})", human_bytes(n));
        }
    }
    human_bytes(n)
}

/// FLOPs with an SI prefix: `1.70 TFLOP`, `29.3 PFLOP`.
#[must_use]
pub fn human_flops(n: u128) -> String {
    const UNITS: [(f64, &str); 6] = [
        (1e21, "ZFLOP"),
        (1e18, "EFLOP"),
        (1e15, "PFLOP"),
        (1e12, "TFLOP"),
        (1e9, "GFLOP"),
        (1e6, "MFLOP"),
    ];
    #[expect(clippy::cast_precision_loss, reason = "display only")]
    let v = n as f64;
    for (scale, unit) in UNITS {
        if v >= scale {
            let x = v / scale;
            return if x < 10.0 {
                format!("{x:.2} {unit}")
            } else {
                format!("{x:.1} {unit}")
            };
        }
    }
    format!("{n} FLOP")
}

/// A `u128` with thousands separators.
#[must_use]
pub fn thousands_u128(n: u128) -> String {
    let digits = n.to_string();
    let len = digits.len();
    // saturates: never (at most 39 digits); a capacity hint in any case.
    let mut out = String::with_capacity(len.saturating_add(len / 3));
    // `rest`: the digits from this one to the end.
    for (rest, c) in (1..=len).rev().zip(digits.chars()) {
        if rest < len && rest.is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `x` rounded to a whole number, when it is one in `0..=u64::MAX` (a rate, hours, dollars
/// shown whole); `None` for a non-finite or out-of-range value, which a table shows as
/// `overflow` rather than a clamped number.
#[must_use]
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "checked to lie in 0..2^64 first"
)]
pub fn whole_f64(x: f64) -> Option<u64> {
    let r = x.round();
    // 2^64 as f64 is exact; every f64 below it converts without clamping.
    (r.is_finite() && r >= 0.0 && r < u64::MAX as f64).then_some(r as u64)
}

/// A floating-point figure for a message: whole numbers with separators, very large or
/// small ones in exponent form (`1e308`), what is not a number as Rust writes it (`inf`).
#[must_use]
pub fn float_text(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() || a >= 1e15 || (a > 0.0 && a < 1e-3) {
        format!("{x:e}").replace("inf", "infinity")
    } else if a >= 100.0 {
        let whole = whole_f64(a).map_or_else(|| format!("{a}"), thousands);
        if x < 0.0 { format!("-{whole}") } else { whole }
    } else {
        format!("{x}")
    }
}

/// Seconds in a readable unit.
#[must_use]
pub fn human_seconds(s: f64) -> String {
    if !s.is_finite() {
        "overflow".to_owned()
    } else if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else if s < 120.0 {
        format!("{s:.2} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else if s < 3.0 * 86400.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.1} days", s / 86400.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_past_their_type_are_overflow_not_clamped() {
        assert_eq!(whole_f64(29_144.4), Some(29_144));
        assert_eq!(whole_f64(1.8e19), Some(18_000_000_000_000_000_000));
        // 2^64 itself and beyond, negatives, infinities and NaN have no whole u64.
        for x in [
            18_446_744_073_709_551_616.0,
            1e308,
            -1.0,
            f64::INFINITY,
            f64::NAN,
        ] {
            assert_eq!(whole_f64(x), None, "{x}");
        }
        assert_eq!(human_seconds(f64::INFINITY), "overflow");
        assert_eq!(human_seconds(f64::NAN), "overflow");
        assert_eq!(float_text(1e308), "1e308");
        assert_eq!(float_text(29_144.4), "29,144");
        assert_eq!(float_text(2.5), "2.5");
        assert_eq!(float_text(f64::INFINITY), "infinity");
    }

    #[test]
    fn separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(124_439_808), "124,439,808");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn human_units() {
        assert_eq!(human_count(124_439_808), "124.4M");
        assert_eq!(human_count(6_738_415_616), "6.74B");
        assert_eq!(human_count(671_026_404_352), "671.0B");
        assert_eq!(human_count(10_000_000_000_000), "10.0T");
        assert_eq!(human_count(512), "512");
    }

    #[test]
    fn relative_error_sign() {
        assert_eq!(relative(90, 100), "-10.00%");
        assert_eq!(relative(110, 100), "+10.00%");
    }
}
