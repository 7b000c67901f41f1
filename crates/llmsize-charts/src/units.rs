//! Units that scale with the numbers drawn: parameters in K/M/B/T, bytes in MiB/GiB/TiB,
//! FLOPs in GFLOP…EFLOP. Axes use the scaled unit; the exact integers sit beside the bars.

/// A scale for an axis: divide by `div`, say `name`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Scale {
    /// What a value is divided by.
    pub div: f64,
    /// The unit's name in axis titles (`millions`, `GiB`, `TFLOP`).
    pub name: &'static str,
}

impl Scale {
    /// `v` in this unit.
    #[expect(clippy::cast_precision_loss, reason = "drawing only; labels are exact")]
    pub(crate) fn of(self, v: u128) -> f64 {
        v as f64 / self.div
    }
}

/// Parameters: the largest unit the biggest value reaches.
pub(crate) fn count_scale(max: u128) -> Scale {
    match max {
        m if m >= 1_000_000_000_000 => Scale {
            div: 1e12,
            name: "trillions",
        },
        m if m >= 1_000_000_000 => Scale {
            div: 1e9,
            name: "billions",
        },
        m if m >= 1_000_000 => Scale {
            div: 1e6,
            name: "millions",
        },
        m if m >= 1_000 => Scale {
            div: 1e3,
            name: "thousands",
        },
        _ => Scale { div: 1.0, name: "" },
    }
}

/// Bytes in binary units, as the tables print GiB.
pub(crate) fn bytes_scale(max: u128) -> Scale {
    match max {
        m if m >= 1 << 40 => Scale {
            div: 1_099_511_627_776.0,
            name: "TiB",
        },
        m if m >= 1 << 30 => Scale {
            div: 1_073_741_824.0,
            name: "GiB",
        },
        m if m >= 1 << 20 => Scale {
            div: 1_048_576.0,
            name: "MiB",
        },
        _ => Scale {
            div: 1024.0,
            name: "KiB",
        },
    }
}

/// FLOPs with SI prefixes, as `human_flops` prints them.
pub(crate) fn flops_scale(max: u128) -> Scale {
    const UNITS: [(u128, f64, &str); 5] = [
        (1_000_000_000_000_000_000_000, 1e21, "ZFLOP"),
        (1_000_000_000_000_000_000, 1e18, "EFLOP"),
        (1_000_000_000_000_000, 1e15, "PFLOP"),
        (1_000_000_000_000, 1e12, "TFLOP"),
        (1_000_000_000, 1e9, "GFLOP"),
    ];
    UNITS.iter().find(|(at, _, _)| max >= *at).map_or(
        Scale {
            div: 1e6,
            name: "MFLOP",
        },
        |(_, div, name)| Scale { div: *div, name },
    )
}

/// A value in a unit with two decimals below 100 and one above (`12.55 GiB`, `6.74`).
pub(crate) fn short(v: f64) -> String {
    if v < 100.0 {
        format!("{v:.2}")
    } else if v < 1e6 {
        format!("{v:.1}")
    } else {
        format!("{v:.3e}")
    }
}

/// An axis tick: as few decimals as the tick needs.
pub(crate) fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{v:.1e}")
    } else if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_follow_the_largest_value() {
        assert_eq!(count_scale(124_439_808).name, "millions");
        assert_eq!(count_scale(6_738_415_616).name, "billions");
        assert_eq!(count_scale(999).name, "");
        assert_eq!(bytes_scale(25_757_220_864).name, "GiB");
        assert_eq!(bytes_scale(u128::from(u64::MAX)).name, "TiB");
        assert_eq!(flops_scale(u128::MAX).name, "ZFLOP");
        assert_eq!(flops_scale(0).name, "MFLOP");
        assert_eq!(tick(5.0), "5");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(0.25), "0.25");
    }
}
