//! How a stream draws random blocks other than uniformly: fio's `zipf`, `pareto`
//! (`lib/zipf.c`) and `normal` (`lib/gauss.c`) per file, and its `zoned` / `zoned_abs`
//! zones per direction (`zone-dist.c`, `io_u.c`).

use fsbench_model::dist::Rng;
use fsbench_model::model::stream::{Skew, Zones};
use rand::Rng as _;

/// fio's `zipf_state` (`lib/zipf.c`) and `gauss_state` (`lib/gauss.c`): ranges of the
/// smallest block size, the Zipf sum over them (up to 10 million, as fio caps it), the
/// normal deviation, and the draw's offset.
pub(super) struct SkewState {
    nranges: u64,
    kind: Kind,
    theta: f64,
    zetan: f64,
    zeta2: f64,
    pareto_pow: f64,
    /// `normal`: the deviation in ranges (0: none).
    stddev: u64,
    rand_off: u64,
    rng: Rng,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Zipf,
    Pareto,
    Normal,
}

/// The multiplier of fio's `__hash_u64` (the golden ratio's, as Linux's `hash_64`).
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

/// fio's `GAUSS_ITERS`: uniform draws averaged into one normal draw.
const GAUSS_ITERS: u64 = 12;

impl SkewState {
    pub(super) fn new(skew: Skew, len: u64, unit: u64, seed: u64) -> Option<SkewState> {
        let nranges = len.div_ceil(unit).max(1);
        let mut rng = fsbench_model::dist::rng(seed, 0x21bf);
        let (kind, theta, h, dev, center) = match skew {
            Skew::Uniform | Skew::Zoned => return None,
            Skew::Zipf { theta, center } => (Kind::Zipf, theta, 0.0, 0.0, center),
            Skew::Pareto { h, center } => (Kind::Pareto, 0.0, h, 0.0, center),
            Skew::Normal { dev, center } => (Kind::Normal, 0.0, 0.0, dev, center),
        };
        let rand_off = match (kind, center) {
            // gauss_init: `nranges * (center - 0.5)`, none without a center (a negative
            // offset wraps, as the C conversion does on x86-64).
            (Kind::Normal, Some(c)) => (nranges as f64 * (c - 0.5)) as i64 as u64,
            (Kind::Normal, None) => 0,
            (_, Some(c)) => (nranges as f64 * c) as u64,
            (_, None) => rng.random::<u32>() as u64,
        };
        let zetan = if kind == Kind::Zipf {
            (0..nranges.min(10_000_000))
                .map(|i| (1.0 / (i + 1) as f64).powf(theta))
                .sum()
        } else {
            0.0
        };
        let stddev = if dev != 0.0 {
            ((nranges as f64 * dev / 100.0).ceil() as u64).min(nranges / 2)
        } else {
            0
        };
        Some(SkewState {
            nranges,
            kind,
            theta,
            zetan,
            zeta2: 1.0 + 0.5f64.powf(theta),
            pareto_pow: if kind == Kind::Pareto {
                h.ln() / (1.0 - h).ln()
            } else {
                0.0
            },
            stddev,
            rand_off,
            rng,
        })
    }

    /// fio's `zipf_next` / `pareto_next` / `gauss_next`: a range number.
    pub(super) fn next(&mut self) -> u64 {
        let n = self.nranges;
        let val = match self.kind {
            Kind::Zipf => {
                let u = self.rng.random::<u32>() as f64 / u32::MAX as f64;
                let alpha = 1.0 / (1.0 - self.theta);
                let eta = (1.0 - (2.0 / n as f64).powf(1.0 - self.theta))
                    / (1.0 - self.zeta2 / self.zetan);
                let z = u * self.zetan;
                let v = if z < 1.0 {
                    1
                } else if z < 1.0 + 0.5f64.powf(self.theta) {
                    2
                } else {
                    1 + (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
                };
                v - 1
            }
            Kind::Pareto => {
                let u = self.rng.random::<u32>() as f64 / u32::MAX as f64;
                ((n - 1) as f64 * u.powf(self.pareto_pow)) as u64
            }
            Kind::Normal => self.gauss(),
        };
        val.wrapping_mul(GOLDEN_RATIO_64)
            .wrapping_add(self.rand_off)
            % n
    }

    /// `gauss_next` before the scatter: the rounded-up mean of 12 draws in `0..=n`, moved
    /// by a uniform deviation in `-stddev/2..stddev/2`, halved while the sum would leave
    /// the ranges (as unsigned arithmetic: a sum below 0 leaves them too).
    fn gauss(&mut self) -> u64 {
        let n = self.nranges;
        let mut sum: u64 = 0;
        for _ in 0..GAUSS_ITERS {
            sum += self.rng.random::<u32>() as u64 % (n + 1);
        }
        sum = sum.div_ceil(GAUSS_ITERS);
        if self.stddev > 0 {
            let r = self.rng.random::<u32>() as f64 / (u32::MAX as f64 + 1.0);
            let vr = (self.stddev as f64 * r) as i64;
            let mut dev = vr - (self.stddev / 2) as i64;
            while sum.wrapping_add(dev as u64) >= n {
                dev /= 2;
            }
            sum = sum.wrapping_add(dev as u64);
        }
        sum
    }
}

/// fio's `zone_state_index` of each direction: for each access draw 1..=100, the zone's
/// start and end (percent of the file's blocks, or bytes with `zoned_abs`). Empty: that
/// direction draws uniformly.
pub(super) struct ZoneTable {
    abs: bool,
    index: [Vec<(u64, u64)>; 2],
}

impl ZoneTable {
    pub(super) fn new(zones: &[Zones; 2]) -> ZoneTable {
        let index = [0, 1].map(|d| {
            let mut t = Vec::with_capacity(100);
            let mut prev = 0;
            for z in &zones[d].parts {
                for _ in 0..z.access {
                    t.push((prev, prev + z.size));
                }
                prev += z.size;
            }
            t.truncate(100);
            t
        });
        ZoneTable {
            abs: zones[0].abs || zones[1].abs,
            index,
        }
    }

    /// fio's `__get_next_rand_offset_zoned(_abs)`: a block of a file of `blocks` blocks
    /// of `unit` bytes, `None` when direction `dir` has no zones.
    pub(super) fn draw(&self, dir: usize, blocks: u64, unit: u64, rng: &mut Rng) -> Option<u64> {
        let t = &self.index[dir];
        if t.is_empty() {
            return None;
        }
        let v = rng.random_range(1..=100usize);
        let (prev, end) = t[(v - 1).min(t.len() - 1)];
        let (start, len) = if self.abs {
            (prev / unit, end / unit - prev / unit)
        } else {
            (prev * blocks / 100, blocks * (end - prev) / 100)
        };
        let u = rng.random::<u32>() as f64 / (u32::MAX as f64 + 1.0);
        Some(start + (len as f64 * u) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_model::model::stream::Zone;

    /// Draws per range, most drawn first.
    fn spread(skew: Skew, n: u64, draws: usize) -> Vec<usize> {
        let mut s = SkewState::new(skew, n * 4096, 4096, 7).unwrap();
        let mut hits = vec![0usize; n as usize];
        for _ in 0..draws {
            let v = s.next();
            assert!(v < n);
            hits[v as usize] += 1;
        }
        hits.sort_unstable_by(|a, b| b.cmp(a));
        hits
    }

    #[test]
    fn zipf_ranks_follow_the_exponent_and_are_scattered() {
        // theta 1.2 over 1000 ranges: the first rank has 1 / sum(i^-1.2) of the draws,
        // about 23%.
        let hits = spread(
            Skew::Zipf {
                theta: 1.2,
                center: None,
            },
            1024,
            100_000,
        );
        let top = hits[0] as f64 / 100_000.0;
        assert!((0.21..0.25).contains(&top), "{top}");
        // The most drawn ranges are not the first ones of the file (the hash scatters).
        let mut s = SkewState::new(
            Skew::Zipf {
                theta: 1.2,
                center: Some(0.0),
            },
            1000 * 4096,
            4096,
            1,
        )
        .unwrap();
        let first = (0..1000).map(|_| s.next()).filter(|v| *v < 10).count();
        assert!(first < 500, "{first}");
    }

    #[test]
    fn pareto_gives_most_draws_to_few_ranges() {
        // h = 0.2: about 80% of the draws in 20% of the ranges. (A power of two of ranges:
        // fio's multiplicative scatter maps other counts onto fewer ranges, as here.)
        let hits = spread(
            Skew::Pareto {
                h: 0.2,
                center: None,
            },
            1024,
            100_000,
        );
        let top: usize = hits[..205].iter().sum();
        assert!(top > 70_000, "{top}");
        // h = 0.5 draws uniformly.
        let uniform = spread(
            Skew::Pareto {
                h: 0.5,
                center: None,
            },
            1024,
            100_000,
        );
        let top: usize = uniform[..205].iter().sum();
        assert!(top < 25_000, "{top}");
    }

    #[test]
    fn normal_draws_gather_around_the_middle_before_the_scatter() {
        // fio's gauss_next without the hash: the mean of 12 uniform draws over 1000
        // ranges has a standard deviation of 1000 / sqrt(12 * 12), about 83: two thirds
        // of the draws within 83 of the middle.
        let mut s = SkewState::new(
            Skew::Normal {
                dev: 0.0,
                center: None,
            },
            1000 * 4096,
            4096,
            3,
        )
        .unwrap();
        let draws: Vec<u64> = (0..20_000).map(|_| s.gauss()).collect();
        assert!(draws.iter().all(|v| *v <= 1000));
        let near = draws.iter().filter(|v| v.abs_diff(500) <= 83).count();
        assert!((12_000..15_000).contains(&near), "{near}");
        // The deviation widens it: 40% of the ranges spread the draws further.
        let mut w = SkewState::new(
            Skew::Normal {
                dev: 40.0,
                center: None,
            },
            1000 * 4096,
            4096,
            3,
        )
        .unwrap();
        assert_eq!(w.stddev, 400);
        let near_w = (0..20_000)
            .map(|_| w.gauss())
            .filter(|v| v.abs_diff(500) <= 83)
            .count();
        assert!(near_w < near * 9 / 10, "{near_w} vs {near}");
        // After the scatter, every draw is a range of the file, and they are not uniform:
        // the most drawn tenth of 1024 ranges takes far more than a tenth of the draws.
        let hits = spread(
            Skew::Normal {
                dev: 0.0,
                center: Some(0.5),
            },
            1024,
            100_000,
        );
        let top: usize = hits[..102].iter().sum();
        assert!(top > 30_000, "{top}");
    }

    #[test]
    fn zones_take_their_share_of_the_draws_in_their_part_of_the_file() {
        let zones = [
            Zones {
                abs: false,
                parts: vec![
                    Zone {
                        access: 80,
                        size: 10,
                    },
                    Zone {
                        access: 20,
                        size: 90,
                    },
                ],
            },
            Zones::default(),
        ];
        let t = ZoneTable::new(&zones);
        let mut rng = fsbench_model::dist::rng(5, 1);
        let mut first = 0;
        for _ in 0..10_000 {
            let b = t.draw(0, 1000, 4096, &mut rng).unwrap();
            assert!(b < 1000);
            first += usize::from(b < 100);
        }
        // 80% of the accesses in the first 10% of the blocks (a binomial's spread).
        assert!((7_700..8_300).contains(&first), "{first}");
        // Writes have no zones: uniform.
        assert!(t.draw(1, 1000, 4096, &mut rng).is_none());
        // zoned_abs: bytes.
        let abs = ZoneTable::new(&[
            Zones {
                abs: true,
                parts: vec![
                    Zone {
                        access: 50,
                        size: 4096 * 10,
                    },
                    Zone {
                        access: 50,
                        size: 4096 * 20,
                    },
                ],
            },
            Zones::default(),
        ]);
        for _ in 0..1000 {
            assert!(abs.draw(0, 1000, 4096, &mut rng).unwrap() < 30);
        }
    }
}
