//! The ratio of two means with its 95% interval: Fieller's interval for independent samples
//! with unequal variances, its degrees of freedom by Welch–Satterthwaite. The p-value of the
//! same comparison is Welch's t-test (ratio 1 is a difference of 0).

use super::repeat::{mean_var, t975, welch};

/// `mean(a) / mean(b)`, its 95% interval and Welch's two-sided p-value.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Ratio {
    pub ratio: f64,
    /// The interval's bounds; `None` when it is unbounded (the baseline's mean is not
    /// clearly away from zero: Fieller's g ≥ 1) or either side has fewer than two values.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub p_value: Option<f64>,
}

impl Ratio {
    /// Significant at 95%: the interval leaves out 1 (equivalently, Welch's p < 0.05 up to
    /// the approximation of the degrees of freedom).
    pub fn significant(&self) -> bool {
        match (self.ci_low, self.ci_high) {
            (Some(l), Some(h)) => l > 1.0 || h < 1.0,
            _ => false,
        }
    }
}

/// The ratio of the means of `a` over `b`. `None` when `b`'s mean is 0 or a side is empty.
pub fn ratio(a: &[f64], b: &[f64]) -> Option<Ratio> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    if mb == 0.0 {
        return None;
    }
    let r = ma / mb;
    let p_value = welch(a, b).map(|w| w.p_value);
    if a.len() < 2 || b.len() < 2 {
        return Some(Ratio {
            ratio: r,
            ci_low: None,
            ci_high: None,
            p_value,
        });
    }
    let (sa, sb) = (va / a.len() as f64, vb / b.len() as f64);
    let (ci_low, ci_high) = match fieller(ma, sa, a.len(), mb, sb, b.len()) {
        Some((l, h)) => (Some(l), Some(h)),
        None => (None, None),
    };
    Some(Ratio {
        ratio: r,
        ci_low,
        ci_high,
        p_value,
    })
}

/// Fieller's 95% interval of `ma / mb` for independent means with squared standard errors
/// `sa`, `sb`: the ratios R for which `(ma − R·mb)² ≤ t²·(sa + R²·sb)`, t at the
/// Welch–Satterthwaite degrees of freedom of `ma − R·mb` at the point estimate.
fn fieller(ma: f64, sa: f64, na: usize, mb: f64, sb: f64, nb: usize) -> Option<(f64, f64)> {
    let r = ma / mb;
    let (ea, eb) = (sa, r * r * sb);
    let df = if ea + eb == 0.0 {
        (na + nb - 2) as f64
    } else {
        (ea + eb).powi(2) / (ea * ea / (na - 1) as f64 + eb * eb / (nb - 1) as f64)
    };
    let t2 = t975(df).powi(2);
    // (mb² − t²·sb)·R² − 2·ma·mb·R + (ma² − t²·sa) ≤ 0
    let qa = mb * mb - t2 * sb;
    if qa <= 0.0 {
        return None;
    }
    let qb = -2.0 * ma * mb;
    let qc = ma * ma - t2 * sa;
    let disc = qb * qb - 4.0 * qa * qc;
    let root = disc.max(0.0).sqrt();
    let (x, y) = ((-qb - root) / (2.0 * qa), (-qb + root) / (2.0 * qa));
    Some((x.min(y), x.max(y)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_solves_fiellers_equation_and_holds_the_ratio() {
        let a = [9.0, 10.0, 11.0, 10.5, 9.5];
        let b = [20.0, 21.0, 19.0, 20.0];
        let r = ratio(&a, &b).unwrap();
        assert!((r.ratio - 0.5).abs() < 1e-12);
        let (l, h) = (r.ci_low.unwrap(), r.ci_high.unwrap());
        assert!(l < 0.5 && 0.5 < h, "{l} {h}");
        assert!(r.significant());
        assert!(r.p_value.unwrap() < 1e-6);
        // Each bound makes the pivot exactly t: (ma − R·mb)² = t²·(sa + R²·sb).
        let (ma, va) = mean_var(&a);
        let (mb, vb) = mean_var(&b);
        let (sa, sb) = (va / 5.0, vb / 4.0);
        let (ea, eb) = (sa, 0.25 * sb);
        let df = (ea + eb).powi(2) / (ea * ea / 4.0 + eb * eb / 3.0);
        let t2 = t975(df).powi(2);
        for x in [l, h] {
            let lhs = (ma - x * mb).powi(2);
            let rhs = t2 * (sa + x * x * sb);
            assert!((lhs - rhs).abs() < 1e-9 * rhs.max(1.0), "{lhs} {rhs}");
        }
        // Not symmetric around the ratio: Fieller's interval leans away from zero.
        assert!(h - 0.5 > 0.5 - l);
    }

    #[test]
    fn exact_samples_give_a_point_and_equal_means_are_not_significant() {
        let r = ratio(&[3.0, 3.0, 3.0], &[2.0, 2.0]).unwrap();
        assert_eq!((r.ci_low, r.ci_high), (Some(1.5), Some(1.5)));
        let r = ratio(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]).unwrap();
        assert_eq!(r.ratio, 1.0);
        assert!(!r.significant());
        assert!(r.ci_low.unwrap() < 1.0 && r.ci_high.unwrap() > 1.0);
    }

    #[test]
    fn unbounded_and_undefined() {
        // The baseline's mean is within its own noise of zero: no bounded interval.
        let r = ratio(&[5.0, 6.0], &[-1.0, 1.5]).unwrap();
        assert_eq!((r.ci_low, r.ci_high), (None, None));
        assert!(!r.significant());
        assert!(ratio(&[1.0], &[0.0, 0.0]).is_none());
        let r = ratio(&[1.0], &[2.0, 2.0]).unwrap();
        assert_eq!(r.ratio, 0.5);
        assert_eq!(r.ci_low, None);
    }
}
