//! A stored figure's value as a person reads it. Figures are stored as bare numbers under
//! names that carry their unit by convention (`_s` seconds, `_ms` milliseconds, `_per_s`
//! rates, `mb_per_s` MiB per second, `_pct` percent, `bytes` in the name a byte count, ...):
//! the summary prints each with the unit its name says, scaled to read at a glance
//! (`56.20 ms`, `927.3 KiB`, `7181/s`), while CSV and JSON keep the stored numbers exact.

/// What a figure's name says its value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds, after the factor that turns the stored value into seconds (`_ms`: 1e-3).
    Seconds(Scale),
    /// Bytes, after the factor that turns the stored value into bytes (`_mb`: 1e6).
    Bytes(Scale),
    /// MiB per second (`mb_per_s`, as Filebench and PostMark count them).
    MibPerSec,
    /// Events per second.
    Rate,
    /// Percent (0 to 100).
    Percent,
    /// A share from 0 to 1, shown as a percentage.
    Fraction,
    /// A count or a plain number (a score, a ratio): whole numbers stay whole.
    Plain,
}

/// Multiplier from a stored value to its base unit, as a power of ten (`-3` for ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale(pub i32);

impl Unit {
    /// The unit of a figure named `name` (its last dotted part: `per_user.user_s` is seconds).
    pub fn of(name: &str) -> Unit {
        let n = name.rsplit('.').next().unwrap_or(name);
        if n.ends_with("mb_per_s") {
            Unit::MibPerSec
        } else if n.ends_with("_per_s") {
            Unit::Rate
        } else if n.ends_with("_pct") {
            Unit::Percent
        } else if n == "share" || n.ends_with("_frac") || n.ends_with("_util") || n == "util" {
            Unit::Fraction
        } else if n.ends_with("_ns") {
            Unit::Seconds(Scale(-9))
        } else if n.ends_with("_us") {
            Unit::Seconds(Scale(-6))
        } else if n.ends_with("_ms") {
            Unit::Seconds(Scale(-3))
        } else if n.ends_with("_s") {
            Unit::Seconds(Scale(0))
        } else if n.ends_with("_mb") {
            // fsbench's device figures (`device_read_mb`): 10^6 bytes.
            Unit::Bytes(Scale(6))
        } else if n.contains("bytes") {
            Unit::Bytes(Scale(0))
        } else {
            Unit::Plain
        }
    }
}

/// A figure's mean and the half-width of its interval, in the unit its name says, both
/// scaled as the mean is (so that they compare at a glance): `("56.20 ms", "38.30 ms")`.
pub fn mean_and_ci(name: &str, mean: f64, ci: f64) -> (String, String) {
    let (div, suffix) = scale_for(Unit::of(name), mean);
    let unit = Unit::of(name);
    let whole = match unit {
        Unit::Plain => is_whole(mean) && is_whole(ci),
        Unit::Bytes(_) => suffix == " B",
        _ => false,
    };
    let (m, c) = if whole {
        (format!("{:.0}", mean / div), format!("{:.0}", ci / div))
    } else if matches!(unit, Unit::Percent | Unit::Fraction) {
        (format!("{:.1}", mean / div), format!("{:.1}", ci / div))
    } else {
        (sig(mean / div, 4), sig(ci / div, 3))
    };
    (format!("{m}{suffix}"), format!("{c}{suffix}"))
}

/// A figure's value alone, as [`mean_and_ci`] prints a mean.
pub fn value(name: &str, v: f64) -> String {
    mean_and_ci(name, v, 0.0).0
}

fn is_whole(v: f64) -> bool {
    v.is_finite() && (v - v.round()).abs() < 1e-9 * v.abs().max(1.0)
}

/// The divisor from the stored value to the printed one, and the unit printed after it.
fn scale_for(unit: Unit, mean: f64) -> (f64, &'static str) {
    let m = mean.abs();
    match unit {
        Unit::Seconds(Scale(p)) => {
            let s = m * 10f64.powi(p);
            let (d, u) = if s >= 1.0 || s == 0.0 {
                (1.0, " s")
            } else if s >= 1e-3 {
                (1e-3, " ms")
            } else {
                (1e-6, " µs")
            };
            (d / 10f64.powi(p), u)
        }
        Unit::Bytes(Scale(p)) => {
            const U: [&str; 6] = [" B", " KiB", " MiB", " GiB", " TiB", " PiB"];
            let mut b = m * 10f64.powi(p);
            let mut i = 0;
            while b >= 1024.0 && i < U.len() - 1 {
                b /= 1024.0;
                i += 1;
            }
            (1024f64.powi(i as i32) / 10f64.powi(p), U[i])
        }
        Unit::MibPerSec if m > 0.0 && m < 1.0 => (1.0 / 1024.0, " KiB/s"),
        Unit::MibPerSec if m >= 1024.0 => (1024.0, " GiB/s"),
        Unit::MibPerSec => (1.0, " MiB/s"),
        Unit::Rate => (1.0, "/s"),
        Unit::Percent => (1.0, "%"),
        Unit::Fraction => (0.01, "%"),
        Unit::Plain => (1.0, ""),
    }
}

/// `v` to `digits` significant digits, never in exponent form: `7181`, `56.20`, `0.01230`.
/// A number with more whole digits than `digits` is rounded to a whole number (`12948`),
/// not shortened.
pub fn sig(v: f64, digits: usize) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if v == 0.0 {
        return "0".into();
    }
    let mag = v.abs().log10().floor() as i32;
    let decimals = (digits as i32 - 1 - mag).clamp(0, 12) as usize;
    let text = format!("{v:.decimals$}");
    // Rounding can carry into another digit (9.99996 → 10.000): one decimal fewer then.
    let carried = text
        .parse::<f64>()
        .is_ok_and(|r| r.abs() >= 10f64.powi(mag + 1));
    if carried && decimals > 0 {
        format!("{v:.*}", decimals - 1)
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_their_units() {
        assert_eq!(Unit::of("total_s"), Unit::Seconds(Scale(0)));
        assert_eq!(Unit::of("p99_ms"), Unit::Seconds(Scale(-3)));
        assert_eq!(Unit::of("per_user.user_s"), Unit::Seconds(Scale(0)));
        assert_eq!(Unit::of("transactions_per_s"), Unit::Rate);
        assert_eq!(Unit::of("read_mb_per_s"), Unit::MibPerSec);
        assert_eq!(Unit::of("bytes_read"), Unit::Bytes(Scale(0)));
        assert_eq!(Unit::of("remote.bytes_fetched"), Unit::Bytes(Scale(0)));
        assert_eq!(Unit::of("device_read_mb"), Unit::Bytes(Scale(6)));
        assert_eq!(Unit::of("cache_hit_pct"), Unit::Percent);
        assert_eq!(Unit::of("device_util"), Unit::Fraction);
        assert_eq!(Unit::of("process.reader1.share"), Unit::Fraction);
        assert_eq!(Unit::of("created"), Unit::Plain);
    }

    #[test]
    fn values_read_at_a_glance() {
        assert_eq!(value("bytes_read", 32031424.0), "30.55 MiB");
        assert_eq!(value("bytes_read", 971082.0), "948.3 KiB");
        assert_eq!(value("bytes_read", 512.0), "512 B");
        assert_eq!(value("device_read_mb", 0.0133), "12.99 KiB");
        assert_eq!(value("transactions_per_s", 7180.5835), "7181/s");
        assert_eq!(value("ops_per_s", 12947.5466), "12948/s");
        assert_eq!(value("read_ops_per_s", 12.34567), "12.35/s");
        assert_eq!(value("total_s", 0.0562), "56.20 ms");
        assert_eq!(value("elapsed_s", 123.456), "123.5 s");
        assert_eq!(value("mean_latency_ms", 0.0679), "67.90 µs");
        assert_eq!(value("p99_ms", 4.0434), "4.043 ms");
        assert_eq!(value("mb_per_s", 40.484), "40.48 MiB/s");
        assert_eq!(value("mb_per_s", 0.5), "512.0 KiB/s");
        assert_eq!(value("mb_per_s", 0.0), "0 MiB/s");
        assert_eq!(value("cache_hit_pct", 98.6292), "98.6%");
        assert_eq!(value("device_util", 0.0589), "5.9%");
        assert_eq!(value("created", 249.0), "249");
        assert_eq!(value("created", 249.5), "249.5");
        assert_eq!(value("errors", 0.0), "0");
        assert_eq!(value("score", 0.81234), "0.8123");
    }

    #[test]
    fn the_interval_is_scaled_as_the_mean() {
        assert_eq!(
            mean_and_ci("total_s", 0.0562, 0.0383),
            ("56.20 ms".to_string(), "38.3 ms".to_string())
        );
        assert_eq!(
            mean_and_ci("bytes_read", 971082.0, 0.0),
            ("948.3 KiB".to_string(), "0 KiB".to_string())
        );
        assert_eq!(
            mean_and_ci("created", 249.0, 0.0),
            ("249".to_string(), "0".to_string())
        );
    }

    #[test]
    fn significant_digits() {
        assert_eq!(sig(7180.5835, 4), "7181");
        assert_eq!(sig(0.012346, 4), "0.01235");
        assert_eq!(sig(9.6, 4), "9.600");
        assert_eq!(sig(9.99996, 4), "10.00");
        assert_eq!(sig(-56.2, 3), "-56.2");
        assert_eq!(sig(0.0, 4), "0");
    }
}
