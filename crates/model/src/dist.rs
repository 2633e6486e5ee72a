//! Random numbers and distributions: `randvar(...)`, `cvar(...)` and fileset tree shapes.
//!
//! Everything random in fsbench draws from one generator type, [`Rng`], created by
//! [`rng`] from the run seed and a stream index (a worker's index, a fileset's index),
//! so that a seed names one run and two workers never share a sequence.
//!
//! # Two families of random variables
//!
//! The workload language has two constructs, and they differ in small ways that this
//! module keeps, because workloads were tuned against them:
//!
//! * **`randvar(type=uniform|gamma|tabular, min=, mean=, gamma=, round=, randtable=)`**,
//!   the built-in kind ([`Dist::Uniform`], [`Dist::Gamma`], [`Dist::Tabular`]).
//!   - `uniform` draws from `[min, 2*mean - min)`; `gamma` is `min + Gamma(k, (mean-min)/k)`.
//!   - The language has no floats, so `gamma=1500` means k = 1.5; the `shape` of [`Dist::Gamma`]
//!     holds the already divided value. When `mean` is left out of a gamma randvar,
//!     Filebench uses k itself as the mean (so `randvar(gamma=100)` has mean 0.1); the
//!     model layer applies that default, not this module.
//!   - `round=r` rounds to the **nearest** multiple of `r`, halves away from zero
//!     (`round(x / r) * r` in C). There is no clamp.
//!   - A `randtable` spreads its percentages over 100 slots; they must add up to 100.
//!     See [`Dist::Tabular`] for what `min` does to a table.
//! * **`cvar(type=..., parameters=..., min=, max=, round=)`**, the loadable "custom
//!   variables" ([`Dist::CvarGamma`] and the other `Cvar`-style variants). Parameters are
//!   written `key:value;key:value`; every key has a default (see [`cvar_usage`]).
//!   - `round=r` first **truncates** the sample to an integer, then moves it to the nearer
//!     multiple of `r`, ties going **down** (1536 with r=1024 gives 1024).
//!   - After rounding, the value is clamped to `[min, max]`. Without `min`, the lower
//!     bound is C's `DBL_MIN` (the smallest positive double), so a cvar never returns a
//!     negative number or an exact zero; fsbench keeps that with [`f64::MIN_POSITIVE`].
//!
//! # Cvar parameters that do not mean what their names say
//!
//! These follow Filebench's libraries (which use Kuenning's `randistrs`), not textbooks:
//! * `cvar-lognormal`: `exp(Normal(mu = scale, sigma = shape))`, so `scale` is the mean of
//!   the logarithm, not `e^mu`. Mean = `exp(scale + shape^2 / 2)`.
//! * `cvar-erlang`: the `rate` parameter is passed on as the **mean** of the distribution
//!   (`shape` exponentials of mean `rate/shape` summed). Mean = `rate`, not `shape/rate`.
//! * `cvar-weibull`: `scale * (-ln U)^(1/shape)`, the usual Weibull(k = shape, lambda = scale).
//! * `cvar-gamma`: `gamma` is the shape k and `mean` the mean (scale = mean/k).
//!
//! fsbench samples with its own generator and `rand_distr`'s algorithms, so values match
//! Filebench in distribution, not draw for draw.

use rand::Rng as _;
use rand_distr::{Distribution, Exp1, StandardNormal};

/// The one generator type used everywhere in fsbench.
///
/// PCG-64 MCG: small state, fast, and `rand_pcg` documents its output as stable, so a
/// seed reproduces a run across platforms and versions.
pub type Rng = rand_pcg::Pcg64Mcg;

const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// One step of SplitMix64: a bijective 64-bit mixer with good avalanche.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(GOLDEN_GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Derive an independent generator from a run seed and a stream index (worker index,
/// fileset index...), reproducibly.
///
/// The 128-bit state is built with SplitMix64 from both inputs. Because the mixer is a
/// bijection, two streams of one seed (or one stream of two seeds) never start from the
/// same state.
pub fn rng(seed: u64, stream: u64) -> Rng {
    let hi = splitmix64(seed ^ splitmix64(stream));
    let lo = splitmix64(hi ^ stream.rotate_left(32));
    Rng::new((u128::from(hi) << 64) | u128::from(lo))
}

/// One row of a `randtable`: with probability `pct / 100`, a value uniform in `[lo, hi]`.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow {
    pub pct: f64,
    pub lo: f64,
    pub hi: f64,
}

/// A distribution, with its parameters as the workload language names them.
#[derive(Debug, Clone, PartialEq)]
pub enum Dist {
    /// `randvar type=uniform`: values in `[min, 2*mean - min)`.
    Uniform { min: f64, mean: f64 },
    /// `randvar type=gamma` (the default): `min + Gamma(k = shape, theta = (mean - min)/k)`.
    /// `shape` is already divided by 1000 (`gamma=1500` is 1.5).
    Gamma { min: f64, mean: f64, shape: f64 },
    /// `randvar type=tabular, randtable={{pct,lo,hi},...}`: a row is picked with
    /// probability `pct/100`, then a value uniform in `[lo, hi]`.
    ///
    /// Percentages must be >= 0 (a 0% row is allowed and never picked; the shipped
    /// `netsfs.f` has one) and add up to 100.
    ///
    /// `min`: Filebench rescales a table linearly so that its smallest `lo` lands on the
    /// randvar's `min` (default 0) while its mean stays the table's mean; a table whose
    /// values are all equal then always yields `min`. Every shipped workload sets `min`
    /// to the smallest `lo`, which makes the rescaling the identity. `None` samples the
    /// table as written; `Some(m)` reproduces Filebench's rescaling exactly.
    Tabular {
        rows: Vec<TableRow>,
        min: Option<f64>,
    },
    /// `cvar-gamma`: parameters `mean` (default 4096) and `gamma` (the shape k, default 1.5).
    CvarGamma { mean: f64, shape: f64 },
    /// `cvar-uniform`: parameters `lower` (default 0) and `upper` (default 1); `[lower, upper)`.
    CvarUniform { lower: f64, upper: f64 },
    /// `cvar-normal`: parameters `mean` (default 0) and `sigma` (default 1).
    Normal { mean: f64, sigma: f64 },
    /// `cvar-lognormal`: `exp(Normal(mu = scale, sigma = shape))`. Parameters `shape`
    /// (default 1) and `scale` (default 1).
    Lognormal { shape: f64, scale: f64 },
    /// `cvar-exponential`: parameter `mean` (default 1).
    Exponential { mean: f64 },
    /// `cvar-erlang`: parameters `shape` (an integer k >= 1, default 1) and `rate`
    /// (default 1). As in Filebench, `rate` is the **mean** of the result:
    /// Gamma(k, rate / k).
    Erlang { shape: u32, rate: f64 },
    /// `cvar-weibull`: `scale * (-ln U)^(1/shape)`. Parameters `shape` (default 1) and
    /// `scale` (default 1).
    Weibull { shape: f64, scale: f64 },
    /// `cvar-triangular`: parameters `lower` (default 0), `upper` (default 1) and `mode`
    /// (default 0.5).
    Triangular { lower: f64, upper: f64, mode: f64 },
}

/// A random variable as a workload uses it: a distribution plus the clamp and rounding
/// the language attaches to it.
///
/// `min`/`max` are the clamp of `cvar(min=, max=)`; for a `randvar` the `min` lives in
/// the [`Dist`] instead and these stay `None` (if set they clamp the same way).
/// `round` is the `round=` attribute; how it rounds depends on the family, see the
/// module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct RandVar {
    pub dist: Dist,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub round: Option<f64>,
}

impl RandVar {
    /// A random variable with its parameters checked.
    pub fn new(
        dist: Dist,
        min: Option<f64>,
        max: Option<f64>,
        round: Option<f64>,
    ) -> Result<RandVar, String> {
        dist.validate()?;
        for (name, v) in [("min", min), ("max", max), ("round", round)] {
            if let Some(v) = v {
                if !v.is_finite() {
                    return Err(format!("{name}={v} is not a finite number"));
                }
            }
        }
        if let (Some(lo), Some(hi)) = (min, max) {
            if lo > hi {
                return Err(format!("min={lo} is greater than max={hi}"));
            }
        }
        if let Some(r) = round {
            if r < 0.0 {
                return Err(format!("round={r} must not be negative"));
            }
        }
        Ok(RandVar {
            dist,
            min,
            max,
            round,
        })
    }

    /// A random variable without clamp or rounding.
    pub fn plain(dist: Dist) -> RandVar {
        RandVar {
            dist,
            min: None,
            max: None,
            round: None,
        }
    }

    /// Draw one value: sample the distribution, round it, then clamp it, in that order
    /// (as Filebench does; clamping last means `min`/`max` are hard limits even when
    /// they are not multiples of `round`).
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        let cvar = self.dist.is_cvar();
        let mut v = self.dist.sample(rng);
        if let Some(r) = self.round {
            v = if cvar {
                round_cvar(v, r)
            } else {
                round_randvar(v, r)
            };
        }
        let lower = match self.min {
            Some(m) => Some(m),
            // Filebench's default cvar minimum is C's DBL_MIN.
            None if cvar => Some(f64::MIN_POSITIVE),
            None => None,
        };
        if let Some(lo) = lower {
            if v < lo {
                return lo;
            }
        }
        if let Some(hi) = self.max {
            if v > hi {
                return hi;
            }
        }
        v
    }

    /// Analytic mean of the distribution (before rounding and clamping).
    pub fn mean(&self) -> f64 {
        self.dist.mean()
    }

    /// Short human text, e.g. `gamma(mean=131072, shape=1.5, round=512)`: the clamps and
    /// the rounding are the random variable's own attributes, so they go inside its
    /// parentheses (beside others, a bare ` round=512` read like a variable of its own).
    pub fn describe(&self) -> String {
        let mut s = self.dist.describe();
        let own: Vec<String> = [("min", self.min), ("max", self.max), ("round", self.round)]
            .into_iter()
            .filter_map(|(name, v)| v.map(|v| format!("{name}={v}")))
            .collect();
        if !own.is_empty() {
            match s.strip_suffix(')') {
                Some(head) => s = format!("{head}, {})", own.join(", ")),
                None => s = format!("{s}({})", own.join(", ")),
            }
        }
        s
    }
}

/// `randvar` rounding: nearest multiple of `r`, halves away from zero.
fn round_randvar(v: f64, r: f64) -> f64 {
    if r > 0.0 {
        (v / r).round() * r
    } else {
        v
    }
}

/// `cvar` rounding: `r` and the value are truncated to integers, then the value moves to
/// the nearer multiple of `r`, ties going to the lower one. Filebench does this on
/// unsigned integers; negative values are mirrored here (towards zero on ties).
fn round_cvar(v: f64, r: f64) -> f64 {
    let r = r.trunc();
    if r < 1.0 || !v.is_finite() {
        return v;
    }
    let num = v.abs().trunc();
    let lower = num - num % r;
    let upper = lower + r;
    let rounded = if num - lower > upper - num {
        upper
    } else {
        lower
    };
    rounded.copysign(v)
}

/// A gamma sample with shape `k` and the given mean (scale = mean / k).
///
/// Fileset tree construction uses this for directory widths and depths. A shape of 0
/// (Filebench's `dirgamma=0`) returns `mean` itself, making the tree deterministic; so
/// does a mean <= 0.
pub fn gamma_with_mean(rng: &mut Rng, shape: f64, mean: f64) -> f64 {
    let usable = |x: f64| x.is_finite() && x > 0.0;
    if !usable(shape) || !usable(mean) {
        return mean;
    }
    match rand_distr::Gamma::new(shape, mean / shape) {
        Ok(g) => g.sample(rng),
        Err(_) => mean,
    }
}

/// A uniform number in `[0, 1)`.
fn unit(rng: &mut Rng) -> f64 {
    rng.random::<f64>()
}

fn std_normal(rng: &mut Rng) -> f64 {
    let z: f64 = rng.sample(StandardNormal);
    z
}

fn exp1(rng: &mut Rng) -> f64 {
    let e: f64 = rng.sample(Exp1);
    e
}

/// `ln Γ(x)` for `x > 0` (Lanczos approximation, g = 7, about 15 correct digits).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEF: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1-x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).abs().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = COEF[0];
    for (i, c) in COEF.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// `Γ(x)` for `x > 0`.
fn gamma_fn(x: f64) -> f64 {
    ln_gamma(x).exp()
}

/// Smallest `lo` and the mean of a table (mean of row midpoints weighted by percentage).
fn table_min_mean(rows: &[TableRow]) -> (f64, f64) {
    let tmin = rows.iter().map(|r| r.lo).fold(f64::INFINITY, f64::min);
    let total: f64 = rows.iter().map(|r| r.pct).sum();
    let tmean = rows
        .iter()
        .map(|r| r.pct * (r.lo + r.hi) / 2.0)
        .sum::<f64>()
        / total;
    (tmin, tmean)
}

fn check_finite(what: &str, pairs: &[(&str, f64)]) -> Result<(), String> {
    for (name, v) in pairs {
        if !v.is_finite() {
            return Err(format!("{what}: {name}={v} is not a finite number"));
        }
    }
    Ok(())
}

impl Dist {
    /// Whether this is one of the `cvar(...)` types (which round and clamp differently
    /// from `randvar(...)`).
    pub fn is_cvar(&self) -> bool {
        !matches!(
            self,
            Dist::Uniform { .. } | Dist::Gamma { .. } | Dist::Tabular { .. }
        )
    }

    /// Check the parameters; the error says which one is wrong and what is expected.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Dist::Uniform { .. } | Dist::Gamma { .. } | Dist::Tabular { .. } => {
                self.validate_randvar()
            }
            _ => self.validate_cvar(),
        }
    }

    /// The checks of Filebench's own random variable types.
    fn validate_randvar(&self) -> Result<(), String> {
        match self {
            Dist::Uniform { min, mean } => {
                check_finite("uniform randvar", &[("min", *min), ("mean", *mean)])?;
                if mean < min {
                    return Err(format!(
                        "uniform randvar: mean={mean} is below min={min}; values are drawn \
                         from [min, 2*mean-min], so mean must be at least min"
                    ));
                }
            }
            Dist::Gamma { min, mean, shape } => {
                check_finite(
                    "gamma randvar",
                    &[("min", *min), ("mean", *mean), ("gamma", *shape)],
                )?;
                if *shape <= 0.0 {
                    return Err(format!(
                        "gamma randvar: gamma must be greater than 0 (written x1000, e.g. \
                         gamma=1500 for a shape of 1.5), got shape {shape}"
                    ));
                }
                if mean < min {
                    return Err(format!(
                        "gamma randvar: mean={mean} is below min={min}; the mean must be at \
                         least min"
                    ));
                }
            }
            Dist::Tabular { rows, min } => {
                if rows.is_empty() {
                    return Err(
                        "randtable is empty; write randtable={{pct,lo,hi},...} with \
                                percentages adding up to 100"
                            .to_string(),
                    );
                }
                if let Some(m) = min {
                    check_finite("tabular randvar", &[("min", *m)])?;
                }
                for (i, r) in rows.iter().enumerate() {
                    let n = i + 1;
                    check_finite(
                        &format!("randtable row {n}"),
                        &[("percentage", r.pct), ("lo", r.lo), ("hi", r.hi)],
                    )?;
                    if r.pct < 0.0 {
                        return Err(format!(
                            "randtable row {n}: percentage {} is negative",
                            r.pct
                        ));
                    }
                    if r.lo > r.hi {
                        return Err(format!(
                            "randtable row {n}: lower bound {} is greater than upper bound {}",
                            r.lo, r.hi
                        ));
                    }
                }
                let total: f64 = rows.iter().map(|r| r.pct).sum();
                if (total - 100.0).abs() > 1e-9 {
                    return Err(format!(
                        "randtable percentages add up to {total}, but they must add up to \
                         exactly 100"
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The checks of the cvar distributions.
    fn validate_cvar(&self) -> Result<(), String> {
        match self {
            Dist::CvarGamma { mean, shape } => {
                check_finite("cvar-gamma", &[("mean", *mean), ("gamma", *shape)])?;
                if *shape <= 0.0 {
                    return Err(format!(
                        "cvar-gamma: gamma (the shape) must be greater than 0, got {shape}"
                    ));
                }
                if *mean <= 0.0 {
                    return Err(format!(
                        "cvar-gamma: mean must be greater than 0, got {mean}"
                    ));
                }
            }
            Dist::CvarUniform { lower, upper } => {
                check_finite("cvar-uniform", &[("lower", *lower), ("upper", *upper)])?;
                if lower > upper {
                    return Err(format!(
                        "cvar-uniform: lower={lower} is greater than upper={upper}"
                    ));
                }
            }
            Dist::Normal { mean, sigma } => {
                check_finite("cvar-normal", &[("mean", *mean), ("sigma", *sigma)])?;
                if *sigma <= 0.0 {
                    return Err(format!(
                        "cvar-normal: sigma (the standard deviation) must be greater than 0, \
                         got {sigma}"
                    ));
                }
            }
            Dist::Lognormal { shape, scale } => {
                check_finite("cvar-lognormal", &[("shape", *shape), ("scale", *scale)])?;
                if *shape <= 0.0 {
                    return Err(format!(
                        "cvar-lognormal: shape (the standard deviation of the logarithm) \
                         must be greater than 0, got {shape}"
                    ));
                }
            }
            Dist::Exponential { mean } => {
                check_finite("cvar-exponential", &[("mean", *mean)])?;
                if *mean <= 0.0 {
                    return Err(format!(
                        "cvar-exponential: mean must be greater than 0, got {mean}"
                    ));
                }
            }
            Dist::Erlang { shape, rate } => {
                check_finite("cvar-erlang", &[("rate", *rate)])?;
                if *shape < 1 {
                    return Err(format!(
                        "cvar-erlang: shape must be a whole number of at least 1, got {shape}"
                    ));
                }
                if *rate <= 0.0 {
                    return Err(format!(
                        "cvar-erlang: rate (the mean of the values) must be greater than 0, \
                         got {rate}"
                    ));
                }
            }
            Dist::Weibull { shape, scale } => {
                check_finite("cvar-weibull", &[("shape", *shape), ("scale", *scale)])?;
                if *shape <= 0.0 {
                    return Err(format!(
                        "cvar-weibull: shape must be greater than 0, got {shape}"
                    ));
                }
                if *scale <= 0.0 {
                    return Err(format!(
                        "cvar-weibull: scale must be greater than 0, got {scale}"
                    ));
                }
            }
            Dist::Triangular { lower, upper, mode } => {
                check_finite(
                    "cvar-triangular",
                    &[("lower", *lower), ("upper", *upper), ("mode", *mode)],
                )?;
                if lower > upper {
                    return Err(format!(
                        "cvar-triangular: lower={lower} is greater than upper={upper}"
                    ));
                }
                if mode < lower || mode > upper {
                    return Err(format!(
                        "cvar-triangular: mode={mode} must lie between lower={lower} and \
                         upper={upper}"
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Draw one value from the distribution itself (no rounding, no clamp).
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        match self {
            Dist::Uniform { min, mean } => min + unit(rng) * 2.0 * (mean - min),
            Dist::Gamma { min, mean, shape } => min + gamma_with_mean(rng, *shape, mean - min),
            Dist::Tabular { rows, min } => {
                let v = sample_table(rows, rng);
                match min {
                    None => v,
                    Some(m) => {
                        let (tmin, tmean) = table_min_mean(rows);
                        let spread = tmean - tmin;
                        if spread == 0.0 {
                            *m
                        } else {
                            (v - tmin) / spread * (tmean - m) + m
                        }
                    }
                }
            }
            Dist::CvarGamma { mean, shape } => gamma_with_mean(rng, *shape, *mean),
            Dist::CvarUniform { lower, upper } => lower + unit(rng) * (upper - lower),
            Dist::Normal { mean, sigma } => mean + sigma * std_normal(rng),
            Dist::Lognormal { shape, scale } => (scale + shape * std_normal(rng)).exp(),
            Dist::Exponential { mean } => mean * exp1(rng),
            Dist::Erlang { shape, rate } => gamma_with_mean(rng, f64::from(*shape), *rate),
            Dist::Weibull { shape, scale } => scale * exp1(rng).powf(1.0 / shape),
            Dist::Triangular { lower, upper, mode } => {
                let width = upper - lower;
                if width <= 0.0 {
                    return *lower;
                }
                let c = (mode - lower) / width;
                let u = unit(rng);
                let x = if u < c {
                    (c * u).sqrt()
                } else {
                    1.0 - ((1.0 - c) * (1.0 - u)).sqrt()
                };
                lower + width * x
            }
        }
    }

    /// Analytic mean.
    pub fn mean(&self) -> f64 {
        match self {
            Dist::Uniform { mean, .. } | Dist::Gamma { mean, .. } => *mean,
            Dist::Tabular { rows, min } => {
                let (tmin, tmean) = table_min_mean(rows);
                match min {
                    Some(m) if tmean == tmin => *m,
                    _ => tmean,
                }
            }
            Dist::CvarGamma { mean, .. } | Dist::Normal { mean, .. } => *mean,
            Dist::CvarUniform { lower, upper } => (lower + upper) / 2.0,
            Dist::Lognormal { shape, scale } => (scale + shape * shape / 2.0).exp(),
            Dist::Exponential { mean } => *mean,
            Dist::Erlang { rate, .. } => *rate,
            Dist::Weibull { shape, scale } => scale * gamma_fn(1.0 + 1.0 / shape),
            Dist::Triangular { lower, upper, mode } => (lower + upper + mode) / 3.0,
        }
    }

    /// Analytic variance.
    pub fn variance(&self) -> f64 {
        match self {
            Dist::Uniform { min, mean } => {
                let w = 2.0 * (mean - min);
                w * w / 12.0
            }
            Dist::Gamma { min, mean, shape } => {
                let theta = (mean - min) / shape;
                shape * theta * theta
            }
            Dist::Tabular { rows, min } => {
                let total: f64 = rows.iter().map(|r| r.pct).sum();
                let second: f64 = rows
                    .iter()
                    .map(|r| r.pct * (r.lo * r.lo + r.lo * r.hi + r.hi * r.hi) / 3.0)
                    .sum::<f64>()
                    / total;
                let (tmin, tmean) = table_min_mean(rows);
                let var = (second - tmean * tmean).max(0.0);
                match min {
                    None => var,
                    Some(_) if tmean == tmin => 0.0,
                    Some(m) => {
                        let a = (tmean - m) / (tmean - tmin);
                        var * a * a
                    }
                }
            }
            Dist::CvarGamma { mean, shape } => mean * mean / shape,
            Dist::CvarUniform { lower, upper } => (upper - lower).powi(2) / 12.0,
            Dist::Normal { sigma, .. } => sigma * sigma,
            Dist::Lognormal { shape, scale } => {
                let s2 = shape * shape;
                (s2.exp() - 1.0) * (2.0 * scale + s2).exp()
            }
            Dist::Exponential { mean } => mean * mean,
            Dist::Erlang { shape, rate } => rate * rate / f64::from(*shape),
            Dist::Weibull { shape, scale } => {
                let g1 = gamma_fn(1.0 + 1.0 / shape);
                let g2 = gamma_fn(1.0 + 2.0 / shape);
                scale * scale * (g2 - g1 * g1)
            }
            Dist::Triangular { lower, upper, mode } => {
                let (a, b, c) = (*lower, *upper, *mode);
                (a * a + b * b + c * c - a * b - a * c - b * c) / 18.0
            }
        }
    }

    /// Analytic standard deviation.
    pub fn std_dev(&self) -> f64 {
        self.variance().sqrt()
    }

    /// Short human text, e.g. `gamma(mean=131072, shape=1.5)`.
    pub fn describe(&self) -> String {
        match self {
            Dist::Uniform { min, mean } => format!("uniform(min={min}, mean={mean})"),
            Dist::Gamma { min, mean, shape } => {
                format!("gamma(min={min}, mean={mean}, shape={shape})")
            }
            Dist::Tabular { rows, min } => {
                let body: Vec<String> = rows
                    .iter()
                    .map(|r| format!("{}%:[{},{}]", r.pct, r.lo, r.hi))
                    .collect();
                match min {
                    Some(m) => format!("tabular(min={m}, {})", body.join(", ")),
                    None => format!("tabular({})", body.join(", ")),
                }
            }
            Dist::CvarGamma { mean, shape } => format!("gamma(mean={mean}, shape={shape})"),
            Dist::CvarUniform { lower, upper } => {
                format!("uniform(lower={lower}, upper={upper})")
            }
            Dist::Normal { mean, sigma } => format!("normal(mean={mean}, sigma={sigma})"),
            Dist::Lognormal { shape, scale } => {
                format!("lognormal(shape={shape}, scale={scale})")
            }
            Dist::Exponential { mean } => format!("exponential(mean={mean})"),
            Dist::Erlang { shape, rate } => format!("erlang(shape={shape}, rate={rate})"),
            Dist::Weibull { shape, scale } => format!("weibull(shape={shape}, scale={scale})"),
            Dist::Triangular { lower, upper, mode } => {
                format!("triangular(lower={lower}, upper={upper}, mode={mode})")
            }
        }
    }
}

/// Pick a row in proportion to its percentage, then a value uniform inside it. One
/// uniform draw does both: its position within the chosen row's share of [0, total) is
/// itself uniform.
fn sample_table(rows: &[TableRow], rng: &mut Rng) -> f64 {
    let total: f64 = rows.iter().map(|r| r.pct).sum();
    let x = unit(rng) * total;
    let mut start = 0.0;
    for r in rows {
        let end = start + r.pct;
        if x < end {
            let frac = ((x - start) / r.pct).clamp(0.0, 1.0);
            return r.lo + frac * (r.hi - r.lo);
        }
        start = end;
    }
    // Rounding left x at the very top: take the last row that can be picked.
    match rows.iter().rev().find(|r| r.pct > 0.0) {
        Some(r) => r.hi,
        None => f64::NAN,
    }
}

/// One cvar type: its Filebench name and its parameters with their defaults.
struct CvarSpec {
    name: &'static str,
    params: &'static [(&'static str, f64)],
}

const CVARS: &[CvarSpec] = &[
    CvarSpec {
        name: "cvar-gamma",
        params: &[("mean", 4096.0), ("gamma", 1.5)],
    },
    CvarSpec {
        name: "cvar-uniform",
        params: &[("lower", 0.0), ("upper", 1.0)],
    },
    CvarSpec {
        name: "cvar-normal",
        params: &[("mean", 0.0), ("sigma", 1.0)],
    },
    CvarSpec {
        name: "cvar-lognormal",
        params: &[("shape", 1.0), ("scale", 1.0)],
    },
    CvarSpec {
        name: "cvar-exponential",
        params: &[("mean", 1.0)],
    },
    CvarSpec {
        name: "cvar-erlang",
        params: &[("shape", 1.0), ("rate", 1.0)],
    },
    CvarSpec {
        name: "cvar-weibull",
        params: &[("shape", 1.0), ("scale", 1.0)],
    },
    CvarSpec {
        name: "cvar-triangular",
        params: &[("lower", 0.0), ("upper", 1.0), ("mode", 0.5)],
    },
];

const CVAR_NAMES: &[&str] = &[
    "cvar-gamma",
    "cvar-uniform",
    "cvar-normal",
    "cvar-lognormal",
    "cvar-exponential",
    "cvar-erlang",
    "cvar-weibull",
    "cvar-triangular",
];

/// Names of all cvar types (as Filebench spells them), for help text.
pub fn cvar_types() -> &'static [&'static str] {
    CVAR_NAMES
}

fn find_cvar(type_name: &str) -> Option<&'static CvarSpec> {
    let t = type_name.trim().to_ascii_lowercase();
    let short = t.strip_prefix("cvar-").unwrap_or(&t);
    CVARS.iter().find(|s| &s.name["cvar-".len()..] == short)
}

fn param_list(spec: &CvarSpec) -> String {
    spec.params
        .iter()
        .map(|(k, d)| format!("{k} (default {d})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Usage text for one cvar type: its parameters, their defaults and an example, or
/// `None` if the type is unknown.
pub fn cvar_usage(type_name: &str) -> Option<String> {
    let spec = find_cvar(type_name)?;
    let example = spec
        .params
        .iter()
        .map(|(k, d)| format!("{k}:{d}"))
        .collect::<Vec<_>>()
        .join(";");
    Some(format!(
        "{}: parameters {}; example: cvar(type={}, parameters={})",
        spec.name,
        param_list(spec),
        spec.name,
        example
    ))
}

/// Parse a cvar's `type` and `parameters`.
///
/// `type_name` may be written `cvar-gamma` (Filebench's name) or `gamma`, in any case.
/// `parameters` is Filebench's syntax: `key:value` pairs separated by `;`, e.g.
/// `mean:131072;gamma:1.5`. Empty pieces (`;;`) are ignored and every parameter left out
/// takes its default. Values are plain decimal numbers; unlike the rest of the language,
/// suffixes such as `k` are not understood (Filebench would silently read `4k` as 4, so
/// fsbench refuses it).
pub fn parse_cvar(type_name: &str, parameters: &str) -> Result<Dist, String> {
    let spec = find_cvar(type_name).ok_or_else(|| {
        format!(
            "unknown cvar type '{}'; expected one of: {}",
            type_name.trim(),
            CVAR_NAMES.join(", ")
        )
    })?;
    let name = spec.name;
    let mut values: Vec<Option<f64>> = vec![None; spec.params.len()];
    for piece in parameters.split(';') {
        let piece = piece.trim();
        if piece.is_empty() {
            continue;
        }
        let (key, value) = piece.split_once(':').ok_or_else(|| {
            format!("{name}: parameter '{piece}' has no value; write {piece}:<number>")
        })?;
        let key = key.trim().to_ascii_lowercase();
        let value = value.trim();
        if key.is_empty() {
            return Err(format!(
                "{name}: '{piece}' has no parameter name before ':'; parameters are written \
                 name:value, e.g. {}:{}",
                spec.params[0].0, spec.params[0].1
            ));
        }
        let idx = spec
            .params
            .iter()
            .position(|(k, _)| *k == key)
            .ok_or_else(|| {
                format!(
                    "{name} has no parameter '{key}'; it takes: {}",
                    param_list(spec)
                )
            })?;
        if values[idx].is_some() {
            return Err(format!("{name}: parameter '{key}' is given more than once"));
        }
        values[idx] = Some(parse_number(name, &key, value)?);
    }
    let get = |i: usize| values[i].unwrap_or(spec.params[i].1);
    let dist = match name {
        "cvar-gamma" => Dist::CvarGamma {
            mean: get(0),
            shape: get(1),
        },
        "cvar-uniform" => Dist::CvarUniform {
            lower: get(0),
            upper: get(1),
        },
        "cvar-normal" => Dist::Normal {
            mean: get(0),
            sigma: get(1),
        },
        "cvar-lognormal" => Dist::Lognormal {
            shape: get(0),
            scale: get(1),
        },
        "cvar-exponential" => Dist::Exponential { mean: get(0) },
        "cvar-erlang" => {
            let k = get(0);
            if k.fract() != 0.0 || !(1.0..=f64::from(u32::MAX)).contains(&k) {
                return Err(format!(
                    "cvar-erlang: shape must be a whole number of at least 1, got {k}"
                ));
            }
            Dist::Erlang {
                shape: k as u32,
                rate: get(1),
            }
        }
        "cvar-weibull" => Dist::Weibull {
            shape: get(0),
            scale: get(1),
        },
        "cvar-triangular" => Dist::Triangular {
            lower: get(0),
            upper: get(1),
            mode: get(2),
        },
        _ => unreachable!("every entry of CVARS is handled"),
    };
    dist.validate()?;
    Ok(dist)
}

fn parse_number(cvar: &str, key: &str, value: &str) -> Result<f64, String> {
    if value.is_empty() {
        return Err(format!(
            "{cvar}: parameter '{key}' has an empty value; write {key}:<number>"
        ));
    }
    match value.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(v) => Err(format!(
            "{cvar}: parameter '{key}' must be a finite number, got {v}"
        )),
        Err(_) => {
            let hint = match value.char_indices().last() {
                Some((i, c))
                    if matches!(c.to_ascii_lowercase(), 'k' | 'm' | 'g')
                        && value[..i].parse::<f64>().is_ok() =>
                {
                    let mult = match c.to_ascii_lowercase() {
                        'k' => 1024.0,
                        'm' => 1024.0 * 1024.0,
                        _ => 1024.0 * 1024.0 * 1024.0,
                    };
                    let n: f64 = value[..i].parse().unwrap_or(0.0);
                    format!(
                        "; size suffixes are not understood inside cvar parameters, write {}",
                        n * mult
                    )
                }
                _ => String::new(),
            };
            Err(format!(
                "{cvar}: parameter '{key}' must be a number, got '{value}'{hint}"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = 200_000;

    /// Sample mean and standard deviation of `n` draws.
    fn stats(n: usize, mut draw: impl FnMut() -> f64) -> (f64, f64) {
        let mut sum = 0.0;
        let mut sum2 = 0.0;
        for _ in 0..n {
            let x = draw();
            sum += x;
            sum2 += x * x;
        }
        let mean = sum / n as f64;
        let var = (sum2 / n as f64 - mean * mean) * n as f64 / (n as f64 - 1.0);
        (mean, var.max(0.0).sqrt())
    }

    /// Check sample mean and standard deviation against the analytic ones. The mean must
    /// be within 5 standard errors; the standard deviation within `sd_tol` (relative).
    fn check_moments(dist: &Dist, seed: u64, sd_tol: f64) {
        dist.validate().unwrap();
        let mut r = rng(seed, 0);
        let (m, s) = stats(N, || dist.sample(&mut r));
        let mean = dist.mean();
        let sd = dist.std_dev();
        let se = sd / (N as f64).sqrt();
        assert!(
            (m - mean).abs() <= 5.0 * se + 1e-12 * mean.abs(),
            "{}: sample mean {m} vs analytic {mean} (5 SE = {})",
            dist.describe(),
            5.0 * se
        );
        assert!(
            (s - sd).abs() <= sd_tol * sd,
            "{}: sample sd {s} vs analytic {sd}",
            dist.describe()
        );
    }

    #[test]
    fn same_seed_same_sequence_streams_differ() {
        let mut a = rng(42, 0);
        let mut b = rng(42, 0);
        let xa: Vec<u64> = (0..64).map(|_| a.random::<u64>()).collect();
        let xb: Vec<u64> = (0..64).map(|_| b.random::<u64>()).collect();
        assert_eq!(xa, xb);
        let mut c = rng(42, 1);
        let xc: Vec<u64> = (0..64).map(|_| c.random::<u64>()).collect();
        assert_ne!(xa, xc);
        let mut d = rng(43, 0);
        let xd: Vec<u64> = (0..64).map(|_| d.random::<u64>()).collect();
        assert_ne!(xa, xd);
        // Neighbouring streams must not be shifted copies of each other.
        assert!(!xc.iter().any(|v| xa.contains(v)));
    }

    #[test]
    fn rng_output_is_pinned() {
        // A seed must mean the same run in every version: if these change, results
        // recorded with earlier versions can no longer be reproduced.
        let mut r = rng(1, 2);
        assert_eq!(r.random::<u64>(), 0xd7f0_def5_0a8c_5a22);
        assert_eq!(r.random::<f64>(), 0.302_088_086_920_402_23);
    }

    #[test]
    fn randvar_uniform_moments_and_range() {
        let d = Dist::Uniform {
            min: 1000.0,
            mean: 5000.0,
        };
        check_moments(&d, 1, 0.01);
        let mut r = rng(1, 1);
        for _ in 0..10_000 {
            let x = d.sample(&mut r);
            assert!((1000.0..9000.0).contains(&x), "{x} outside [1000, 9000)");
        }
    }

    #[test]
    fn randvar_gamma_moments_and_min() {
        // filemicro_seqwriterandvargam.f: min=1k, mean=5632, gamma=1500
        let d = Dist::Gamma {
            min: 1024.0,
            mean: 5632.0,
            shape: 1.5,
        };
        assert!((d.std_dev() - 4608.0 / 1.5f64.sqrt()).abs() < 1e-6);
        check_moments(&d, 2, 0.02);
        let mut r = rng(2, 1);
        assert!((0..10_000).all(|_| d.sample(&mut r) >= 1024.0));
        // A small shape (gamma=100 in netsfs.f) goes through a different algorithm.
        check_moments(
            &Dist::Gamma {
                min: 0.0,
                mean: 10.0,
                shape: 0.1,
            },
            3,
            0.05,
        );
    }

    #[test]
    fn cvar_gamma_moments() {
        check_moments(
            &Dist::CvarGamma {
                mean: 131072.0,
                shape: 1.5,
            },
            4,
            0.02,
        );
    }

    #[test]
    fn cvar_uniform_moments_and_range() {
        let d = Dist::CvarUniform {
            lower: 4096.0,
            upper: 8192.0,
        };
        check_moments(&d, 5, 0.01);
        let mut r = rng(5, 1);
        assert!((0..10_000).all(|_| (4096.0..8192.0).contains(&d.sample(&mut r))));
    }

    #[test]
    fn normal_moments() {
        check_moments(
            &Dist::Normal {
                mean: 1000.0,
                sigma: 100.0,
            },
            6,
            0.01,
        );
    }

    #[test]
    fn lognormal_moments() {
        let d = Dist::Lognormal {
            shape: 0.5,
            scale: 2.0,
        };
        assert!((d.mean() - (2.125f64).exp()).abs() < 1e-9);
        check_moments(&d, 7, 0.03);
    }

    #[test]
    fn exponential_moments() {
        check_moments(&Dist::Exponential { mean: 250.0 }, 8, 0.02);
    }

    #[test]
    fn erlang_moments_use_rate_as_mean() {
        let d = Dist::Erlang {
            shape: 3,
            rate: 600.0,
        };
        assert_eq!(d.mean(), 600.0);
        assert!((d.std_dev() - 600.0 / 3f64.sqrt()).abs() < 1e-9);
        check_moments(&d, 9, 0.02);
    }

    #[test]
    fn weibull_moments() {
        // shape 1 is the exponential: mean = scale, sd = scale.
        let e = Dist::Weibull {
            shape: 1.0,
            scale: 50.0,
        };
        assert!((e.mean() - 50.0).abs() < 1e-9);
        assert!((e.std_dev() - 50.0).abs() < 1e-9);
        // shape 2 is the Rayleigh: mean = scale * sqrt(pi)/2.
        let d = Dist::Weibull {
            shape: 2.0,
            scale: 100.0,
        };
        let want = 100.0 * std::f64::consts::PI.sqrt() / 2.0;
        assert!((d.mean() - want).abs() < 1e-9, "{} vs {want}", d.mean());
        check_moments(&d, 10, 0.01);
        check_moments(
            &Dist::Weibull {
                shape: 0.7,
                scale: 10.0,
            },
            11,
            0.05,
        );
    }

    #[test]
    fn triangular_moments_and_range() {
        let d = Dist::Triangular {
            lower: 10.0,
            upper: 110.0,
            mode: 30.0,
        };
        assert!((d.mean() - 50.0).abs() < 1e-12);
        check_moments(&d, 12, 0.01);
        let mut r = rng(12, 1);
        assert!((0..10_000).all(|_| (10.0..=110.0).contains(&d.sample(&mut r))));
        // Most draws sit near the mode: more below 50 than above.
        let below = (0..10_000).filter(|_| d.sample(&mut r) < 50.0).count();
        // P(X < 50) = 1 - (110-50)^2 / ((110-10)(110-30)) = 0.55
        assert!((5200..5800).contains(&below), "{below}");
        let flat = Dist::Triangular {
            lower: 7.0,
            upper: 7.0,
            mode: 7.0,
        };
        assert_eq!(flat.sample(&mut r), 7.0);
    }

    #[test]
    fn gamma_function() {
        assert!((gamma_fn(5.0) - 24.0).abs() < 1e-9);
        assert!((gamma_fn(1.5) - std::f64::consts::PI.sqrt() / 2.0).abs() < 1e-12);
        assert!((gamma_fn(11.0) - 3_628_800.0).abs() < 1e-4);
        assert!((gamma_fn(0.5) - std::f64::consts::PI.sqrt()).abs() < 1e-12);
    }

    fn table(rows: &[(f64, f64, f64)]) -> Vec<TableRow> {
        rows.iter()
            .map(|&(pct, lo, hi)| TableRow { pct, lo, hi })
            .collect()
    }

    #[test]
    fn tabular_picks_rows_in_proportion() {
        // netsfs.f $wrtiosize, including its 0% row.
        let k = 1024.0;
        let rows = table(&[
            (0.0, k, 7.0 * k),
            (50.0, 9.0 * k, 15.0 * k),
            (14.0, 17.0 * k, 23.0 * k),
            (14.0, 33.0 * k, 39.0 * k),
            (12.0, 65.0 * k, 71.0 * k),
            (10.0, 129.0 * k, 135.0 * k),
        ]);
        let d = Dist::Tabular {
            rows: rows.clone(),
            min: None,
        };
        d.validate().unwrap();
        check_moments(&d, 13, 0.01);
        let mut r = rng(13, 1);
        let mut counts = [0usize; 6];
        for _ in 0..N {
            let x = d.sample(&mut r);
            let i = rows
                .iter()
                .position(|row| row.lo <= x && x <= row.hi)
                .unwrap_or_else(|| panic!("{x} falls in no row"));
            counts[i] += 1;
        }
        assert_eq!(counts[0], 0, "a 0% row was picked");
        for (row, &c) in rows.iter().zip(&counts) {
            let p = row.pct / 100.0;
            let se = (p * (1.0 - p) / N as f64).sqrt();
            let got = c as f64 / N as f64;
            assert!(
                (got - p).abs() <= 5.0 * se + 1e-12,
                "row {row:?}: picked {got}, expected {p}"
            );
        }
    }

    #[test]
    fn tabular_min_rescales_like_filebench() {
        let rows = table(&[(50.0, 4000.0, 4000.0), (50.0, 8000.0, 8000.0)]);
        // min equal to the smallest lo: the table as written.
        let same = Dist::Tabular {
            rows: rows.clone(),
            min: Some(4000.0),
        };
        let plain = Dist::Tabular {
            rows: rows.clone(),
            min: None,
        };
        let (mut a, mut b) = (rng(14, 0), rng(14, 0));
        for _ in 0..1000 {
            let (x, y) = (same.sample(&mut a), plain.sample(&mut b));
            assert!((x - y).abs() < 1e-6, "{x} vs {y}");
        }
        // min=0: 4000 maps to 0 and the mean (6000) stays, so 8000 maps to 12000.
        let zero = Dist::Tabular {
            rows,
            min: Some(0.0),
        };
        assert_eq!(zero.mean(), 6000.0);
        let mut r = rng(14, 1);
        for _ in 0..1000 {
            let x = zero.sample(&mut r);
            assert!(x.abs() < 1e-6 || (x - 12000.0).abs() < 1e-6, "{x}");
        }
        check_moments(&zero, 15, 0.01);
        // A constant table yields min.
        let constant = Dist::Tabular {
            rows: table(&[(100.0, 8192.0, 8192.0)]),
            min: Some(1024.0),
        };
        assert_eq!(constant.sample(&mut r), 1024.0);
        assert_eq!(constant.mean(), 1024.0);
    }

    #[test]
    fn tabular_validation() {
        let bad_sum = Dist::Tabular {
            rows: table(&[(80.0, 1.0, 4.0), (15.0, 4.0, 16.0)]),
            min: None,
        };
        let e = bad_sum.validate().unwrap_err();
        assert!(e.contains("95") && e.contains("100"), "{e}");
        let negative = Dist::Tabular {
            rows: table(&[(110.0, 1.0, 4.0), (-10.0, 4.0, 16.0)]),
            min: None,
        };
        assert!(negative.validate().unwrap_err().contains("row 2"));
        let inverted = Dist::Tabular {
            rows: table(&[(100.0, 9.0, 4.0)]),
            min: None,
        };
        assert!(inverted.validate().unwrap_err().contains("greater than"));
        let empty = Dist::Tabular {
            rows: vec![],
            min: None,
        };
        assert!(empty.validate().is_err());
    }

    #[test]
    fn randvar_round_is_nearest_half_away() {
        assert_eq!(round_randvar(1536.0, 1024.0), 2048.0);
        assert_eq!(round_randvar(1535.0, 1024.0), 1024.0);
        assert_eq!(round_randvar(100.0, 0.0), 100.0);
        let v = RandVar::new(
            Dist::Uniform {
                min: 0.0,
                mean: 65536.0,
            },
            None,
            None,
            Some(512.0),
        )
        .unwrap();
        let mut r = rng(16, 0);
        let mut saw_nonzero = false;
        for _ in 0..10_000 {
            let x = v.sample(&mut r);
            assert_eq!(x % 512.0, 0.0, "{x} is not a multiple of 512");
            saw_nonzero |= x > 0.0;
        }
        assert!(saw_nonzero);
    }

    #[test]
    fn cvar_round_truncates_then_ties_go_down() {
        assert_eq!(round_cvar(1536.0, 1024.0), 1024.0);
        assert_eq!(round_cvar(1536.9, 1024.0), 1024.0);
        assert_eq!(round_cvar(1537.0, 1024.0), 2048.0);
        assert_eq!(round_cvar(511.0, 1024.0), 0.0);
        assert_eq!(round_cvar(4096.0, 1024.0), 4096.0);
        // round is an integer in Filebench: 0.5 means "no rounding".
        assert_eq!(round_cvar(7.3, 0.5), 7.3);
        assert_eq!(round_cvar(-1537.0, 1024.0), -2048.0);
    }

    #[test]
    fn cvar_round_then_clamp() {
        let constant = Dist::CvarUniform {
            lower: 1800.0,
            upper: 1800.0,
        };
        let mut r = rng(17, 0);
        // 1800 rounds up to 2000, then max clamps it to 1500.
        let v = RandVar::new(constant.clone(), None, Some(1500.0), Some(1000.0)).unwrap();
        assert_eq!(v.sample(&mut r), 1500.0);
        // 1800 rounds to 2000, which min lifts to 2100 (clamping first would give 2000).
        let v = RandVar::new(constant, Some(2100.0), None, Some(1000.0)).unwrap();
        assert_eq!(v.sample(&mut r), 2100.0);
    }

    #[test]
    fn cvar_clamps_hold() {
        let v = RandVar::new(
            Dist::Normal {
                mean: 0.0,
                sigma: 1.0,
            },
            Some(-0.5),
            Some(0.5),
            None,
        )
        .unwrap();
        let mut r = rng(18, 0);
        let xs: Vec<f64> = (0..10_000).map(|_| v.sample(&mut r)).collect();
        assert!(xs.iter().all(|x| (-0.5..=0.5).contains(x)));
        assert!(xs.contains(&-0.5) && xs.contains(&0.5));
        assert!(xs.iter().any(|x| x.abs() < 0.5));
        // Without min, a cvar never goes below DBL_MIN.
        let v = RandVar::plain(Dist::Normal {
            mean: 0.0,
            sigma: 1.0,
        });
        let xs: Vec<f64> = (0..10_000).map(|_| v.sample(&mut r)).collect();
        assert!(xs.iter().all(|&x| x >= f64::MIN_POSITIVE));
        assert!(xs.contains(&f64::MIN_POSITIVE));
        // A randvar has no implicit lower bound of its own beyond its distribution.
        let u = RandVar::plain(Dist::Uniform {
            min: -10.0,
            mean: 0.0,
        });
        assert!((0..1000).any(|_| u.sample(&mut r) < 0.0));
    }

    #[test]
    fn randvar_new_validates() {
        let d = Dist::Exponential { mean: 1.0 };
        assert!(RandVar::new(d.clone(), Some(5.0), Some(1.0), None)
            .unwrap_err()
            .contains("greater than max"));
        assert!(RandVar::new(d.clone(), None, None, Some(-1.0)).is_err());
        assert!(RandVar::new(Dist::Exponential { mean: -1.0 }, None, None, None).is_err());
        let v = RandVar::new(d, Some(1.0), None, Some(512.0)).unwrap();
        assert_eq!(v.describe(), "exponential(mean=1, min=1, round=512)");
    }

    #[test]
    fn gamma_with_mean_zero_shape_is_deterministic() {
        let mut r = rng(19, 0);
        assert_eq!(gamma_with_mean(&mut r, 0.0, 20.0), 20.0);
        assert_eq!(gamma_with_mean(&mut r, 1.5, 0.0), 0.0);
        let (m, s) = stats(N, || gamma_with_mean(&mut r, 1.5, 20.0));
        let sd = 20.0 / 1.5f64.sqrt();
        assert!((m - 20.0).abs() < 5.0 * sd / (N as f64).sqrt(), "{m}");
        assert!((s - sd).abs() < 0.02 * sd, "{s}");
    }

    #[test]
    fn parse_cvar_accepts_filebench_syntax() {
        // cvar_example.f
        assert_eq!(
            parse_cvar("cvar-uniform", "lower:4096;upper:8192").unwrap(),
            Dist::CvarUniform {
                lower: 4096.0,
                upper: 8192.0
            }
        );
        // fileserver.f, varmail.f, webserver.f
        let g = parse_cvar("cvar-gamma", "mean:131072;gamma:1.5").unwrap();
        assert_eq!(
            g,
            Dist::CvarGamma {
                mean: 131072.0,
                shape: 1.5
            }
        );
        assert_eq!(g.describe(), "gamma(mean=131072, shape=1.5)");
        // Short names, any case, order, stray separators and spaces.
        assert_eq!(
            parse_cvar("GAMMA", ";gamma:2;; mean : 100;").unwrap(),
            Dist::CvarGamma {
                mean: 100.0,
                shape: 2.0
            }
        );
        // Defaults.
        assert_eq!(
            parse_cvar("cvar-gamma", "").unwrap(),
            Dist::CvarGamma {
                mean: 4096.0,
                shape: 1.5
            }
        );
        assert_eq!(
            parse_cvar("normal", "").unwrap(),
            Dist::Normal {
                mean: 0.0,
                sigma: 1.0
            }
        );
        assert_eq!(
            parse_cvar("cvar-lognormal", "scale:3").unwrap(),
            Dist::Lognormal {
                shape: 1.0,
                scale: 3.0
            }
        );
        assert_eq!(
            parse_cvar("cvar-exponential", "mean:1e3").unwrap(),
            Dist::Exponential { mean: 1000.0 }
        );
        assert_eq!(
            parse_cvar("cvar-erlang", "shape:4;rate:2.5").unwrap(),
            Dist::Erlang {
                shape: 4,
                rate: 2.5
            }
        );
        assert_eq!(
            parse_cvar("weibull", "shape:2;scale:10").unwrap(),
            Dist::Weibull {
                shape: 2.0,
                scale: 10.0
            }
        );
        assert_eq!(
            parse_cvar("cvar-triangular", "").unwrap(),
            Dist::Triangular {
                lower: 0.0,
                upper: 1.0,
                mode: 0.5
            }
        );
        for t in cvar_types() {
            assert!(parse_cvar(t, "").is_ok(), "{t} defaults must be valid");
            assert!(cvar_usage(t).unwrap().contains("default"));
        }
    }

    #[test]
    fn parse_cvar_rejects_bad_input_clearly() {
        let err = |t: &str, p: &str| parse_cvar(t, p).unwrap_err();
        let e = err("cvar-pareto", "");
        assert!(
            e.contains("cvar-pareto") && e.contains("cvar-weibull"),
            "{e}"
        );
        let e = err("cvar-gamma", "mean:100;shape:2");
        assert!(
            e.contains("'shape'") && e.contains("gamma (default 1.5)"),
            "{e}"
        );
        let e = err("cvar-gamma", "mean");
        assert!(e.contains("'mean' has no value"), "{e}");
        let e = err("cvar-gamma", "mean:");
        assert!(e.contains("empty value"), "{e}");
        let e = err("cvar-gamma", ":5");
        assert!(e.contains("no parameter name"), "{e}");
        let e = err("cvar-gamma", "mean:abc");
        assert!(e.contains("'mean'") && e.contains("'abc'"), "{e}");
        let e = err("cvar-uniform", "lower:4k");
        assert!(e.contains("write 4096"), "{e}");
        let e = err("cvar-gamma", "mean:1;mean:2");
        assert!(e.contains("more than once"), "{e}");
        let e = err("cvar-gamma", "gamma:0");
        assert!(e.contains("greater than 0"), "{e}");
        let e = err("cvar-uniform", "lower:10;upper:5");
        assert!(e.contains("lower=10") && e.contains("upper=5"), "{e}");
        let e = err("cvar-normal", "sigma:-1");
        assert!(e.contains("sigma"), "{e}");
        let e = err("cvar-erlang", "shape:2.5");
        assert!(e.contains("whole number"), "{e}");
        let e = err("cvar-erlang", "shape:0");
        assert!(e.contains("whole number"), "{e}");
        let e = err("cvar-triangular", "lower:0;upper:10;mode:11");
        assert!(e.contains("mode=11"), "{e}");
        let e = err("cvar-exponential", "mean:inf");
        assert!(e.contains("finite"), "{e}");
    }

    #[test]
    fn randvar_validation() {
        assert!(Dist::Uniform {
            min: 10.0,
            mean: 5.0
        }
        .validate()
        .unwrap_err()
        .contains("below min"));
        assert!(Dist::Gamma {
            min: 0.0,
            mean: 5.0,
            shape: 0.0
        }
        .validate()
        .unwrap_err()
        .contains("gamma=1500"));
        assert!(!Dist::Gamma {
            min: 0.0,
            mean: 5.0,
            shape: 1.5
        }
        .is_cvar());
        assert!(Dist::Normal {
            mean: 0.0,
            sigma: 1.0
        }
        .is_cvar());
    }
}
