//! Are a cell's repetitions one population? The largest-gap test: sort the values, split
//! them at the largest gap between neighbours, and compare that gap with the pooled
//! standard deviation within the two sides. Critical values hold false alarms to 1% for
//! normal samples of each size (from 40,000 simulated samples per size); the gap must also
//! be at least 1% of the mean, so that a measurement exact to a few digits is not split by
//! its last one. A side with one value is an outlier; two sides of two or more are two
//! modes. Below four values the test cannot tell and says so.

/// What the test found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Modality {
    /// Fewer than four values.
    TooFew,
    /// No gap stands out.
    OneMode,
    /// One value lies apart from the rest.
    Outlier(Modes),
    /// Two groups of two or more values each.
    Bimodal(Modes),
}

/// The two sides of the largest gap.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Modes {
    pub low_mean: f64,
    pub low_n: usize,
    pub high_mean: f64,
    pub high_n: usize,
    /// The gap over the pooled within-side standard deviation.
    pub gap_ratio: f64,
    /// The critical value it exceeded.
    pub critical: f64,
}

/// Fewest values the test needs.
pub const MIN_N: usize = 4;

/// The 1% critical value of gap / pooled within-side SD for `n` normal values; above 30
/// values, 30's (conservative: the true value falls with n).
pub fn critical(n: usize) -> f64 {
    const T: [(usize, f64); 19] = [
        (4, 28.2),
        (5, 14.0),
        (6, 9.0),
        (7, 7.0),
        (8, 5.8),
        (9, 5.0),
        (10, 4.4),
        (11, 4.1),
        (12, 3.7),
        (13, 3.5),
        (14, 3.3),
        (15, 3.2),
        (16, 3.1),
        (17, 3.0),
        (18, 2.8),
        (19, 2.8),
        (20, 2.7),
        (25, 2.45),
        (30, 2.3),
    ];
    // The entry of the largest size not above n (a smaller sample's value is larger).
    T.iter()
        .rev()
        .find(|(m, _)| *m <= n)
        .map_or(f64::INFINITY, |(_, c)| *c)
}

/// The largest-gap test of `xs`.
pub fn modality(xs: &[f64]) -> Modality {
    let n = xs.len();
    if n < MIN_N {
        return Modality::TooFew;
    }
    let mut v: Vec<f64> = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let k = (1..n)
        .max_by(|&i, &j| (v[i] - v[i - 1]).total_cmp(&(v[j] - v[j - 1])))
        .expect("n ≥ 4");
    let gap = v[k] - v[k - 1];
    let (low, high) = v.split_at(k);
    let (ss, df) = [low, high]
        .iter()
        .filter(|s| s.len() > 1)
        .fold((0.0, 0usize), |(ss, df), s| {
            let (_, var) = super::repeat::mean_var(s);
            (ss + var * (s.len() - 1) as f64, df + s.len() - 1)
        });
    let sd = (ss / df as f64).sqrt();
    let mean = v.iter().sum::<f64>() / n as f64;
    let gap_ratio = if sd > 0.0 { gap / sd } else { f64::INFINITY };
    let crit = critical(n);
    if gap == 0.0 || gap < 0.01 * mean.abs() || gap_ratio < crit {
        return Modality::OneMode;
    }
    let m = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let modes = Modes {
        low_mean: m(low),
        low_n: low.len(),
        high_mean: m(high),
        high_n: high.len(),
        gap_ratio,
        critical: crit,
    };
    if low.len() == 1 || high.len() == 1 {
        Modality::Outlier(modes)
    } else {
        Modality::Bimodal(modes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_modes_are_found_with_their_means() {
        // Readers that ran either near 95 or near 26 MB/s.
        let xs = [92.0, 26.0, 97.0, 24.0, 95.0, 28.0];
        match modality(&xs) {
            Modality::Bimodal(m) => {
                assert_eq!((m.low_n, m.high_n), (3, 3));
                assert!((m.low_mean - 26.0).abs() < 1e-9);
                assert!((m.high_mean - 94.666_666_666).abs() < 1e-6);
                assert!(m.gap_ratio > m.critical);
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn an_outlier_and_one_mode_and_too_few() {
        let xs = [25.1, 25.3, 25.2, 25.2, 25.0, 60.0];
        assert!(
            matches!(modality(&xs), Modality::Outlier(m) if m.high_n == 1 && m.high_mean == 60.0)
        );
        // Evenly spread values: no gap stands out.
        let xs: Vec<f64> = (0..10).map(|i| 100.0 + i as f64).collect();
        assert_eq!(modality(&xs), Modality::OneMode);
        // Identical values.
        assert_eq!(modality(&[3.0; 5]), Modality::OneMode);
        assert_eq!(modality(&[1.0, 100.0, 1.0]), Modality::TooFew);
        // Four values need a wide gap: 28 within-side SDs.
        assert_eq!(modality(&[10.0, 11.0, 30.0, 31.0]), Modality::OneMode);
        assert!(matches!(
            modality(&[10.0, 10.1, 30.0, 30.1]),
            Modality::Bimodal(_)
        ));
        // A last-digit difference is not a mode.
        assert_eq!(
            modality(&[1000.0, 1000.0, 1000.0, 1000.5]),
            Modality::OneMode
        );
    }

    #[test]
    fn normal_samples_rarely_raise_an_alarm() {
        // A fixed-seed check of the 1% calibration: 2,000 normal samples of 8.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        let mut alarms = 0;
        for _ in 0..2000 {
            let xs: Vec<f64> = (0..8)
                .map(|_| {
                    // Box–Muller.
                    let (u, v): (f64, f64) = (rng.random_range(1e-12..1.0), rng.random());
                    100.0 + (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
                })
                .collect();
            if modality(&xs) != Modality::OneMode {
                alarms += 1;
            }
        }
        assert!(alarms < 60, "{alarms} of 2000 (expected about 20)");
    }
}
