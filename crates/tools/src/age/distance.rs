//! How far a live population is from its target, one number per dimension.
//!
//! Both measures compare two discrete distributions over the same ordered
//! buckets (size buckets, depths, age buckets):
//!
//! - **total variation** `½ Σ |p_i − q_i|`: the share of files that would have
//!   to move to another bucket; 0 is identical, 1 is disjoint. It ignores the
//!   order of buckets, so a file one bucket off costs as much as one ten off.
//! - **Kolmogorov–Smirnov** `max_k |P_k − Q_k|` over the cumulative sums: it
//!   respects the order, and is what a goodness-of-fit test would look at.
//!
//! Aging stops on total variation (`--until-converged`); both are reported.
//! Geriatrix used a chi-squared statistic on the age buckets only; chi-squared
//! explodes on buckets with tiny expected counts (published profiles have
//! weights of 1 in 500), which is why it is not used here.

use serde::{Deserialize, Serialize};

/// Distances of one dimension.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Distance {
    /// Total variation distance, in [0, 1].
    pub tv: f64,
    /// Kolmogorov–Smirnov distance, in [0, 1].
    pub ks: f64,
}

/// Normalise counts to fractions (all zero when the total is zero).
pub fn normalise(counts: &[u64]) -> Vec<f64> {
    let total: u64 = counts.iter().sum();
    counts
        .iter()
        .map(|&c| {
            if total == 0 {
                0.0
            } else {
                c as f64 / total as f64
            }
        })
        .collect()
}

/// Total variation distance between two distributions over the same buckets.
pub fn total_variation(p: &[f64], q: &[f64]) -> f64 {
    assert_eq!(p.len(), q.len(), "distributions over different buckets");
    0.5 * p.iter().zip(q).map(|(a, b)| (a - b).abs()).sum::<f64>()
}

/// Kolmogorov–Smirnov distance between two distributions over the same
/// ordered buckets.
pub fn kolmogorov_smirnov(p: &[f64], q: &[f64]) -> f64 {
    assert_eq!(p.len(), q.len(), "distributions over different buckets");
    let (mut cp, mut cq, mut d) = (0.0f64, 0.0f64, 0.0f64);
    for (a, b) in p.iter().zip(q) {
        cp += a;
        cq += b;
        d = d.max((cp - cq).abs());
    }
    d
}

/// Both distances of `actual` (counts) from `target` (fractions). An empty
/// population is at distance 1 from any target.
pub fn distance(actual: &[u64], target: &[f64]) -> Distance {
    if actual.iter().sum::<u64>() == 0 {
        return Distance { tv: 1.0, ks: 1.0 };
    }
    let p = normalise(actual);
    Distance {
        tv: total_variation(&p, target),
        ks: kolmogorov_smirnov(&p, target),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_is_zero_disjoint_is_one() {
        let p = [0.25, 0.25, 0.5];
        assert_eq!(total_variation(&p, &p), 0.0);
        assert_eq!(kolmogorov_smirnov(&p, &p), 0.0);
        let a = [1.0, 0.0];
        let b = [0.0, 1.0];
        assert_eq!(total_variation(&a, &b), 1.0);
        assert_eq!(kolmogorov_smirnov(&a, &b), 1.0);
    }

    #[test]
    fn ks_sees_order_tv_does_not() {
        let p = [1.0, 0.0, 0.0];
        let near = [0.0, 1.0, 0.0];
        let far = [0.0, 0.0, 1.0];
        assert_eq!(total_variation(&p, &near), total_variation(&p, &far));
        // Both reach 1 at the first bucket; KS equals TV for point masses,
        // but for spread mass the order matters:
        let spread = [0.5, 0.5, 0.0];
        let shifted_near = [0.0, 0.5, 0.5];
        let shifted_far = [0.5, 0.0, 0.5];
        assert!((total_variation(&spread, &shifted_near) - 0.5).abs() < 1e-12);
        assert!((total_variation(&spread, &shifted_far) - 0.5).abs() < 1e-12);
        assert!((kolmogorov_smirnov(&spread, &shifted_near) - 0.5).abs() < 1e-12);
        assert!((kolmogorov_smirnov(&spread, &shifted_far) - 0.5).abs() < 1e-12);
        let q = [0.2, 0.3, 0.5];
        let r = [0.3, 0.3, 0.4];
        assert!((total_variation(&q, &r) - 0.1).abs() < 1e-12);
        assert!((kolmogorov_smirnov(&q, &r) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn counts_are_normalised_and_empty_is_far() {
        let d = distance(&[1, 1, 2], &[0.25, 0.25, 0.5]);
        assert!(d.tv < 1e-12 && d.ks < 1e-12);
        assert_eq!(
            distance(&[0, 0], &[0.5, 0.5]),
            Distance { tv: 1.0, ks: 1.0 }
        );
        assert_eq!(normalise(&[0, 0]), vec![0.0, 0.0]);
    }
}
