//! The hard-disk model: a pure function of (request, time) onto service time.
//!
//! Nothing here does I/O or reads a clock: the server passes the current time
//! in, so the model can be unit-tested and used to *predict* what a workload
//! should cost (the integration test does exactly that).
//!
//! # Geometry
//! The image is the whole disk. A preset gives the mechanics of a real drive
//! (rotation speed, seek curve, media rates); the number of cylinders follows
//! from the image size. A 256 MiB image therefore has the preset's full-stroke
//! seek across its 256 MiB and the preset's transfer rates, just fewer tracks.
//! This keeps the effects that matter (distance costs seeks, position on the
//! platter costs rotation, outer zones are faster) at any image size.
//!
//! The disk has `zones` zones of equal cylinder count. The media rate falls
//! linearly from `transfer_outer` in zone 0 (low addresses) to
//! `transfer_inner` in the last zone; a track holds `rate / revolutions per
//! second` bytes. Logical addresses map to cylinders outer to inner, and the
//! angular position of a byte is continuous across track boundaries (the
//! "perfect skew" of Ruemmler and Wilkes: head and track switches are folded
//! into the sustained media rate).
//!
//! # Seek curve
//! As in Ruemmler and Wilkes, "An introduction to disk drive modeling" (IEEE
//! Computer 27(3), 1994), short seeks cost `a + b*sqrt(d)` (the arm accelerates
//! then decelerates) and long seeks `c + e*d` (it coasts). With `f` the seek
//! distance as a fraction of the full stroke, the curve is
//!
//! ```text
//! seek(f) = t_track + A*sqrt(f)                            for f <= f_b
//! seek(f) = seek(f_b) + (t_full - seek(f_b))*(f-f_b)/(1-f_b)  for f >  f_b
//! ```
//!
//! which meets the single-track time at one cylinder, the full-stroke time at
//! the full stroke, and is continuous at the boundary `f_b`. `A` is solved so
//! that the mean over all pairs of cylinders (the weighted average drive
//! manuals specify, distance density `2(1-f)`) equals the configured average.
//!
//! # Rotation
//! The platter angle is `frac(t * rpm / 60)` from the server's epoch, so the
//! rotational latency of a request depends on when it arrives and where the
//! previous one left the head, as on a real disk: a sequential write issued a
//! little late loses almost a whole revolution.
//!
//! # Read-ahead cache
//! `cache_segments` segments of `segment_bytes`. After a read miss the drive
//! keeps reading ahead into the request's segment at the media rate until the
//! segment is full or another request moves the head. A read whose data is
//! already in a segment costs the command overhead plus the bus transfer; a
//! read that continues the stream being read ahead waits only for the data to
//! pass under the head. Writes go through to the media (no write cache) and
//! invalidate what they overlap.
//!
//! # Queueing
//! Requests are served one at a time. With `queue_depth` 1 they are taken in
//! arrival order (FIFO); with a larger depth the drive picks, among the
//! `queue_depth` oldest, the one with the shortest positioning time (SPTF,
//! as tagged command queueing firmware does).

use serde::{Deserialize, Serialize};

/// Parameters of a simulated drive. Times in milliseconds, rates in MB/s
/// (10^6 bytes per second), sizes in bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskParams {
    /// Preset this came from (informational).
    pub model: String,
    /// Spindle speed, revolutions per minute.
    pub rpm: f64,
    /// Single-cylinder seek including settling, ms.
    pub seek_track_ms: f64,
    /// Average seek over all pairs of cylinders, ms.
    pub seek_avg_ms: f64,
    /// Full-stroke seek, ms.
    pub seek_full_ms: f64,
    /// Fraction of the stroke where the sqrt part of the seek curve ends.
    pub seek_boundary: f64,
    /// Media rate in the outermost zone, MB/s.
    pub transfer_outer: f64,
    /// Media rate in the innermost zone, MB/s.
    pub transfer_inner: f64,
    /// Number of recording zones.
    pub zones: u32,
    /// Read/write heads (surfaces), i.e. tracks per cylinder.
    pub heads: u32,
    /// Read-ahead cache segments (0 disables the cache).
    pub cache_segments: u32,
    /// Bytes per cache segment.
    pub segment_bytes: u64,
    /// Interface (bus) rate for data served from the cache, MB/s.
    pub bus_rate: f64,
    /// Fixed per-command controller overhead, ms.
    pub overhead_ms: f64,
    /// 1 = FIFO; N > 1 = shortest-positioning-time-first among the N oldest.
    pub queue_depth: u32,
}

impl DiskParams {
    /// Names of the built-in presets, for help texts and `disk models`.
    pub const PRESETS: &'static [&'static str] = &["hdd", "hdd-cheetah36lp", "hdd-m2694es"];

    /// A built-in preset by name. Sources are in docs/disk.md.
    pub fn preset(name: &str) -> Option<DiskParams> {
        let p = match name {
            // A generic 3.5" 7,200 rpm desktop drive of the SATA era: the
            // figures most data sheets of that class give (8.5 ms average,
            // ~1 ms track-to-track, ~17 ms full stroke, ~120/60 MB/s).
            "hdd" => DiskParams {
                model: "hdd".into(),
                rpm: 7200.0,
                seek_track_ms: 1.0,
                seek_avg_ms: 8.5,
                seek_full_ms: 17.0,
                seek_boundary: 0.2,
                transfer_outer: 120.0,
                transfer_inner: 60.0,
                zones: 16,
                heads: 4,
                cache_segments: 16,
                segment_bytes: 512 * 1024,
                bus_rate: 300.0,
                overhead_ms: 0.1,
                queue_depth: 1,
            },
            // Seagate Cheetah 36LP (ST336704), 10,000 rpm Ultra160 SCSI.
            "hdd-cheetah36lp" => DiskParams {
                model: "hdd-cheetah36lp".into(),
                rpm: 10000.0,
                seek_track_ms: 0.6,
                seek_avg_ms: 5.2,
                seek_full_ms: 12.0,
                seek_boundary: 0.2,
                transfer_outer: 57.0,
                transfer_inner: 38.0,
                zones: 11,
                heads: 12,
                cache_segments: 16,
                segment_bytes: 256 * 1024,
                bus_rate: 160.0,
                overhead_ms: 0.1,
                queue_depth: 1,
            },
            // Fujitsu M2694ES, 5,400 rpm 3.5" SCSI-2, ~1 GB.
            "hdd-m2694es" => DiskParams {
                model: "hdd-m2694es".into(),
                rpm: 5400.0,
                seek_track_ms: 2.5,
                seek_avg_ms: 9.5,
                seek_full_ms: 18.0,
                seek_boundary: 0.2,
                transfer_outer: 6.0,
                transfer_inner: 4.2,
                zones: 8,
                heads: 15,
                cache_segments: 1,
                segment_bytes: 512 * 1024,
                bus_rate: 10.0,
                overhead_ms: 0.5,
                queue_depth: 1,
            },
            _ => return None,
        };
        Some(p)
    }

    /// Check the parameters make a drive (positive rates, a monotone seek curve).
    pub fn validate(&self) -> Result<(), String> {
        let pos = |v: f64, what: &str| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("{what} must be positive (got {v})"))
            }
        };
        pos(self.rpm, "rpm")?;
        pos(self.transfer_outer, "transfer rate")?;
        pos(self.transfer_inner, "inner transfer rate")?;
        pos(self.bus_rate, "bus rate")?;
        if self.seek_track_ms < 0.0 || self.overhead_ms < 0.0 {
            return Err("seek and overhead times must not be negative".into());
        }
        if !(self.seek_boundary > 0.0 && self.seek_boundary < 1.0) {
            return Err("seek boundary must be between 0 and 1".into());
        }
        if self.zones == 0 || self.heads == 0 || self.queue_depth == 0 {
            return Err("zones, heads and queue depth must be at least 1".into());
        }
        if !(self.seek_track_ms <= self.seek_avg_ms && self.seek_avg_ms <= self.seek_full_ms) {
            return Err(format!(
                "seek times must satisfy track ({}) <= average ({}) <= full stroke ({})",
                self.seek_track_ms, self.seek_avg_ms, self.seek_full_ms
            ));
        }
        SeekCurve::new(self).map(|_| ())
    }
}

/// The two-piece seek curve, fitted to (track, average, full stroke).
#[derive(Debug, Clone)]
pub struct SeekCurve {
    track: f64,
    full: f64,
    boundary: f64,
    a: f64,
}

/// Mean of `g(f)` over seek distances between two uniformly random cylinders
/// (density `2(1-f)` on [0,1]), by Simpson's rule on a substitution that
/// tames the sqrt at 0.
fn mean_over_distances(g: impl Fn(f64) -> f64) -> f64 {
    // f = u^2, df = 2u du.
    let n = 4000;
    let h = 1.0 / n as f64;
    let integrand = |u: f64| {
        let f = u * u;
        g(f) * 2.0 * (1.0 - f) * 2.0 * u
    };
    let mut s = integrand(0.0) + integrand(1.0);
    for i in 1..n {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        s += w * integrand(i as f64 * h);
    }
    s * h / 3.0
}

impl SeekCurve {
    pub fn new(p: &DiskParams) -> Result<SeekCurve, String> {
        let fb = p.seek_boundary;
        let l = |f: f64| if f > fb { (f - fb) / (1.0 - fb) } else { 0.0 };
        let g = |f: f64| {
            if f <= fb {
                f.sqrt()
            } else {
                fb.sqrt() * (1.0 - f) / (1.0 - fb)
            }
        };
        let el = mean_over_distances(l);
        let eg = mean_over_distances(g);
        let a = (p.seek_avg_ms - p.seek_track_ms - (p.seek_full_ms - p.seek_track_ms) * el) / eg;
        let curve = SeekCurve {
            track: p.seek_track_ms,
            full: p.seek_full_ms,
            boundary: fb,
            a,
        };
        if a < 0.0 {
            return Err(format!(
                "average seek {} ms is too short for track {} ms and full stroke {} ms \
                 (raise the average or lower the full stroke)",
                p.seek_avg_ms, p.seek_track_ms, p.seek_full_ms
            ));
        }
        if curve.at_boundary() > p.seek_full_ms + 1e-9 {
            return Err(format!(
                "average seek {} ms is too long for full stroke {} ms \
                 (raise the full stroke or lower the average)",
                p.seek_avg_ms, p.seek_full_ms
            ));
        }
        Ok(curve)
    }

    fn at_boundary(&self) -> f64 {
        self.track + self.a * self.boundary.sqrt()
    }

    /// Seek time in ms for a distance given as a fraction of the full stroke
    /// (0 = same cylinder, costs nothing).
    pub fn time_ms(&self, f: f64) -> f64 {
        if f <= 0.0 {
            return 0.0;
        }
        let f = f.min(1.0);
        if f <= self.boundary {
            self.track + self.a * f.sqrt()
        } else {
            let sb = self.at_boundary();
            sb + (self.full - sb) * (f - self.boundary) / (1.0 - self.boundary)
        }
    }
}

/// What a request asks of the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
}

/// The modelled cost of one request, in seconds, and what it did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Service {
    pub overhead: f64,
    pub seek: f64,
    pub rotation: f64,
    pub transfer: f64,
    /// Cylinders travelled by the arm.
    pub cylinders: u64,
    /// Served entirely from the read-ahead cache.
    pub cache_hit: bool,
    /// Continued the stream being read ahead (no positioning).
    pub streamed: bool,
}

impl Service {
    pub fn total(&self) -> f64 {
        self.overhead + self.seek + self.rotation + self.transfer
    }
}

#[derive(Debug, Clone)]
struct Zone {
    /// First byte of the zone.
    start: u64,
    /// First cylinder of the zone.
    first_cyl: u64,
    /// Bytes per track.
    track_bytes: f64,
    /// Media rate, bytes/s.
    rate: f64,
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    start: u64,
    end: u64,
    last_used: f64,
}

/// The read-ahead in progress: the head is streaming into segment `seg`.
#[derive(Debug, Clone, Copy)]
struct Stream {
    seg: usize,
    /// At time `t0` the data up to `pos0` was in the segment.
    t0: f64,
    pos0: u64,
    /// Read-ahead stops here (segment full).
    limit: u64,
    rate: f64,
}

impl Stream {
    fn reached(&self, now: f64) -> u64 {
        if now <= self.t0 {
            return self.pos0;
        }
        let p = self.pos0 as f64 + (now - self.t0) * self.rate;
        (p as u64).min(self.limit).max(self.pos0)
    }
}

/// A disk: geometry, seek curve and the mutable state (head, cache).
#[derive(Debug, Clone)]
pub struct Disk {
    pub params: DiskParams,
    pub capacity: u64,
    pub cylinders: u64,
    cyl_per_zone: u64,
    zones: Vec<Zone>,
    seek: SeekCurve,
    rps: f64,
    head_cyl: u64,
    /// End of the last media transfer (for the sequential case).
    last_end: u64,
    segments: Vec<Segment>,
    stream: Option<Stream>,
}

impl Disk {
    pub fn new(params: DiskParams, capacity: u64) -> Result<Disk, String> {
        params.validate()?;
        if capacity == 0 {
            return Err("disk size must be positive".into());
        }
        let rps = params.rpm / 60.0;
        let nz = params.zones as usize;
        let rate_of = |z: usize| {
            let x = if nz > 1 {
                z as f64 / (nz - 1) as f64
            } else {
                0.0
            };
            1e6 * (params.transfer_outer + (params.transfer_inner - params.transfer_outer) * x)
        };
        let cyl_bytes_sum: f64 = (0..nz)
            .map(|z| rate_of(z) / rps * params.heads as f64)
            .sum();
        let cyl_per_zone = ((capacity as f64 / cyl_bytes_sum).ceil() as u64).max(1);
        let mut zones = Vec::with_capacity(nz);
        let mut start = 0u64;
        for z in 0..nz {
            let rate = rate_of(z);
            let track_bytes = rate / rps;
            zones.push(Zone {
                start,
                first_cyl: z as u64 * cyl_per_zone,
                track_bytes,
                rate,
            });
            start += (track_bytes * params.heads as f64 * cyl_per_zone as f64) as u64;
        }
        let seek = SeekCurve::new(&params)?;
        let segments = Vec::with_capacity(params.cache_segments as usize);
        Ok(Disk {
            cylinders: cyl_per_zone * nz as u64,
            cyl_per_zone,
            zones,
            seek,
            rps,
            head_cyl: 0,
            last_end: u64::MAX,
            segments,
            stream: None,
            capacity,
            params,
        })
    }

    pub fn seek_curve(&self) -> &SeekCurve {
        &self.seek
    }

    /// Time of one revolution, s.
    pub fn revolution(&self) -> f64 {
        1.0 / self.rps
    }

    fn zone_of(&self, off: u64) -> &Zone {
        let i = self.zones.partition_point(|z| z.start <= off);
        &self.zones[i.saturating_sub(1)]
    }

    /// Media rate at a byte offset, bytes/s.
    pub fn rate_at(&self, off: u64) -> f64 {
        self.zone_of(off).rate
    }

    /// Cylinder of a byte offset.
    pub fn cylinder_of(&self, off: u64) -> u64 {
        let z = self.zone_of(off);
        let cyl_bytes = z.track_bytes * self.params.heads as f64;
        let c = ((off - z.start) as f64 / cyl_bytes) as u64;
        (z.first_cyl + c.min(self.cyl_per_zone - 1)).min(self.cylinders - 1)
    }

    /// Angular position (fraction of a turn) of a byte offset.
    fn angle_of(&self, off: u64) -> f64 {
        let z = self.zone_of(off);
        ((off - z.start) as f64 / z.track_bytes).fract()
    }

    fn platter_angle(&self, t: f64) -> f64 {
        (t * self.rps).fract()
    }

    /// Rotational wait (s) at time `t` for the sector of byte `off`. A wait
    /// within a few nanoseconds of a full turn is rounding, not a miss.
    fn rotational_wait(&self, off: u64, t: f64) -> f64 {
        let d = (self.angle_of(off) - self.platter_angle(t)).rem_euclid(1.0);
        if d > 1.0 - 1e-6 {
            0.0
        } else {
            d / self.rps
        }
    }

    /// Seek time (s) between two cylinders.
    pub fn seek_time(&self, from: u64, to: u64) -> f64 {
        let d = from.abs_diff(to);
        if d == 0 {
            return 0.0;
        }
        let f = (d - 1) as f64 / (self.cylinders.max(2) - 1) as f64;
        self.seek.time_ms(f.max(1e-12)) / 1000.0
    }

    fn transfer_time(&self, off: u64, len: u64) -> f64 {
        len as f64 / self.rate_at(off)
    }

    /// Where the head is at `now`, given a read-ahead in progress.
    fn head_at(&self, now: f64) -> u64 {
        match &self.stream {
            Some(s) => self.cylinder_of(s.reached(now).min(self.capacity.saturating_sub(1))),
            None => self.head_cyl,
        }
    }

    /// Positioning time (overhead + seek + rotation, s) a request at `off`
    /// would see if started at `now`; used to pick the next request in SPTF.
    pub fn positioning_estimate(&self, op: Op, off: u64, len: u64, now: f64) -> f64 {
        if op == Op::Read {
            if self.cached(off, len, now) {
                return 0.0;
            }
            if let Some(s) = &self.stream {
                let seg = &self.segments[s.seg];
                if off >= seg.start && off <= s.limit {
                    let ready = s.t0 + (off.saturating_sub(s.pos0)) as f64 / s.rate;
                    return (ready - now).max(0.0);
                }
            }
        }
        let ov = self.params.overhead_ms / 1000.0;
        let cyl = self.cylinder_of(off);
        let seek = if off == self.last_end && self.stream.is_none() {
            0.0
        } else {
            self.seek_time(self.head_at(now), cyl)
        };
        let t1 = now + ov + seek;
        ov + seek + self.rotational_wait(off, t1)
    }

    /// The cache segment holding all of `[off, off+len)` at `now`, if any.
    fn hit_segment(&self, off: u64, len: u64, now: f64) -> Option<usize> {
        let end = off + len;
        self.segments.iter().enumerate().position(|(i, seg)| {
            let seg_end = match &self.stream {
                Some(s) if s.seg == i => s.reached(now),
                _ => seg.end,
            };
            off >= seg.start && end <= seg_end
        })
    }

    fn cached(&self, off: u64, len: u64, now: f64) -> bool {
        self.hit_segment(off, len, now).is_some()
    }

    /// Stop the read-ahead at `now`: the segment keeps what was read, the head
    /// stays where the stream got to.
    fn stop_stream(&mut self, now: f64) {
        if let Some(s) = self.stream.take() {
            let reached = s.reached(now);
            self.segments[s.seg].end = reached;
            self.last_end = reached;
            self.head_cyl = self.cylinder_of(reached.min(self.capacity.saturating_sub(1)));
        }
    }

    /// A read the cache answers: entirely in a segment (bus transfer only), or continuing
    /// the stream being read ahead (waiting for the data to pass under the head).
    fn cached_read(&mut self, off: u64, len: u64, now: f64) -> Option<Service> {
        let ov = self.params.overhead_ms / 1000.0;
        let end = off + len;
        let seg_bytes = self.params.segment_bytes;
        // 1. Entirely in the cache: bus transfer only.
        if let Some(i) = self.hit_segment(off, len, now) {
            self.segments[i].last_used = now;
            return Some(Service {
                overhead: ov,
                transfer: len as f64 / (self.params.bus_rate * 1e6),
                cache_hit: true,
                ..Default::default()
            });
        }
        // 2. Continues the stream being read ahead: wait for the data to
        //    pass under the head, no positioning.
        if let Some(s) = self.stream {
            let seg = self.segments[s.seg];
            if off >= seg.start && off <= s.limit {
                let done = s.t0 + (end - s.pos0) as f64 / s.rate;
                let transfer = (done - now - ov).max(0.0);
                let new_start = seg.start.max(end.saturating_sub(seg_bytes.max(len)));
                self.segments[s.seg] = Segment {
                    start: new_start,
                    end,
                    last_used: now,
                };
                let finish = now + ov + transfer;
                self.stream = Some(Stream {
                    seg: s.seg,
                    t0: finish,
                    pos0: end,
                    limit: (new_start + seg_bytes.max(len)).max(end).min(self.capacity),
                    rate: self.rate_at(end.min(self.capacity.saturating_sub(1))),
                });
                return Some(Service {
                    overhead: ov,
                    transfer,
                    streamed: true,
                    ..Default::default()
                });
            }
        }
        None
    }

    /// After a media read: the read lands in a segment (a free one, or the least recently
    /// used), which the drive goes on filling ahead from `finish`.
    fn start_read_ahead(&mut self, off: u64, len: u64, now: f64, finish: f64) {
        let end = off + len;
        let segs = self.params.cache_segments as usize;
        let seg_bytes = self.params.segment_bytes;
        let seg = Segment {
            start: off,
            end,
            last_used: now,
        };
        let idx = if self.segments.len() < segs {
            self.segments.push(seg);
            self.segments.len() - 1
        } else {
            let (i, _) = self
                .segments
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.last_used.total_cmp(&b.1.last_used))
                .expect("at least one segment");
            self.segments[i] = seg;
            i
        };
        self.stream = Some(Stream {
            seg: idx,
            t0: finish,
            pos0: end,
            limit: (off + seg_bytes.max(len)).min(self.capacity),
            rate: self.rate_at(end.min(self.capacity.saturating_sub(1))),
        });
    }

    /// Serve one request starting at time `now` (s since the epoch).
    /// Returns its cost; the disk is busy until `now + total()`.
    pub fn serve(&mut self, op: Op, off: u64, len: u64, now: f64) -> Service {
        let off = off.min(self.capacity);
        let len = len.min(self.capacity - off);
        let ov = self.params.overhead_ms / 1000.0;
        let end = off + len;
        let segs = self.params.cache_segments as usize;

        if op == Op::Read && segs > 0 {
            if let Some(svc) = self.cached_read(off, len, now) {
                return svc;
            }
        }

        // 3. A media access: seek, wait for the sector, transfer.
        self.stop_stream(now);
        if op == Op::Write {
            // Write-through: drop what the write overlaps.
            self.segments
                .retain(|seg| seg.end <= off || seg.start >= end);
        }
        let target = self.cylinder_of(off.min(self.capacity.saturating_sub(1)));
        let from = self.head_cyl;
        // Continuing exactly where the last transfer ended crosses a track or
        // cylinder boundary at most, which skew hides (as within a request).
        let seek = if off == self.last_end {
            0.0
        } else {
            self.seek_time(from, target)
        };
        let t1 = now + ov + seek;
        let rotation = self.rotational_wait(off, t1);
        let transfer = self.transfer_time(off, len);
        let finish = t1 + rotation + transfer;
        self.head_cyl =
            self.cylinder_of(end.saturating_sub(1).min(self.capacity.saturating_sub(1)));
        self.last_end = end;

        if op == Op::Read && segs > 0 {
            self.start_read_ahead(off, len, now, finish);
        }
        Service {
            overhead: ov,
            seek,
            rotation,
            transfer,
            cylinders: from.abs_diff(target),
            cache_hit: false,
            streamed: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64;

    const GIB: u64 = 1 << 30;

    fn hdd() -> DiskParams {
        DiskParams::preset("hdd").unwrap()
    }

    #[test]
    fn presets_are_valid() {
        for name in DiskParams::PRESETS {
            let p = DiskParams::preset(name).unwrap();
            p.validate().unwrap();
            Disk::new(p, 4 * GIB).unwrap();
        }
    }

    #[test]
    fn seek_curve_is_monotone_and_meets_its_parameters() {
        for name in DiskParams::PRESETS {
            let p = DiskParams::preset(name).unwrap();
            let c = SeekCurve::new(&p).unwrap();
            let mut last = 0.0;
            for i in 1..=10_000 {
                let t = c.time_ms(i as f64 / 10_000.0);
                assert!(t >= last - 1e-12, "{name}: not monotone at {i}");
                last = t;
            }
            assert!((c.time_ms(1e-9) - p.seek_track_ms).abs() < 0.01, "{name}");
            assert!((c.time_ms(1.0) - p.seek_full_ms).abs() < 1e-9, "{name}");
            // Average over random pairs of cylinders of a real disk.
            let d = Disk::new(p.clone(), 8 * GIB).unwrap();
            let mut rng = Pcg64::seed_from_u64(1);
            let n = 200_000;
            let mut sum = 0.0;
            for _ in 0..n {
                let a = rng.random_range(0..d.cylinders);
                let b = rng.random_range(0..d.cylinders);
                sum += d.seek_time(a, b);
            }
            let avg_ms = sum / n as f64 * 1000.0;
            assert!(
                (avg_ms - p.seek_avg_ms).abs() / p.seek_avg_ms < 0.03,
                "{name}: average seek {avg_ms:.3} ms, configured {}",
                p.seek_avg_ms
            );
            let full = d.seek_time(0, d.cylinders - 1) * 1000.0;
            assert!((full - p.seek_full_ms).abs() < 0.01, "{name}: full {full}");
        }
    }

    #[test]
    fn inconsistent_seek_parameters_are_refused() {
        let mut p = hdd();
        p.seek_avg_ms = 1.1; // far too short for a 17 ms full stroke
        assert!(p.validate().is_err());
        let mut p = hdd();
        p.seek_avg_ms = 16.9;
        assert!(p.validate().is_err());
    }

    #[test]
    fn outer_zones_are_faster_and_geometry_covers_the_capacity() {
        let d = Disk::new(hdd(), 4 * GIB).unwrap();
        assert!(d.rate_at(0) > d.rate_at(4 * GIB - 1));
        assert!((d.rate_at(0) - 120e6).abs() < 1.0);
        assert_eq!(d.cylinder_of(0), 0);
        assert!(d.cylinder_of(4 * GIB - 1) < d.cylinders);
        assert!(d.cylinder_of(4 * GIB - 1) >= d.cylinders - d.cyl_per_zone);
    }

    #[test]
    fn sequential_requests_cost_about_the_transfer_time() {
        // Without the cache: back-to-back requests, each starting where the
        // last ended, find the sector right under the head.
        let mut p = hdd();
        p.cache_segments = 0;
        let mut d = Disk::new(p.clone(), 4 * GIB).unwrap();
        let len = 64 * 1024;
        let mut t = 0.0;
        let mut off = GIB;
        d.serve(Op::Read, off, len, t); // position the head
        let first = d.serve(Op::Read, off, len, t);
        t += first.total();
        off += len;
        let mut total = 0.0;
        let n = 1000;
        for _ in 0..n {
            // The overhead elapses before the head reaches the sector, so
            // issue the next request that much early (as a drive's command
            // queue would).
            let s = d.serve(Op::Read, off, len, t - p.overhead_ms / 1000.0);
            t += s.total() - p.overhead_ms / 1000.0;
            total += s.total() - p.overhead_ms / 1000.0;
            off += len;
        }
        let ideal = n as f64 * len as f64 / d.rate_at(GIB);
        assert!(
            total / ideal < 1.05,
            "sequential {total} vs transfer {ideal}"
        );

        // With the cache, a reader that keeps up with the read-ahead pays
        // about the transfer time too.
        let mut d = Disk::new(hdd(), 4 * GIB).unwrap();
        let mut t = 0.0;
        let mut off = GIB;
        let s = d.serve(Op::Read, off, len, t);
        t += s.total() + 50e-6;
        off += len;
        let mut total = 0.0;
        for _ in 0..n {
            let s = d.serve(Op::Read, off, len, t);
            assert!(s.streamed || s.cache_hit);
            assert_eq!(s.seek, 0.0);
            t += s.total() + 50e-6; // the host takes 50 us between requests
            total += s.total();
            off += len;
        }
        let ideal = n as f64 * len as f64 / d.rate_at(GIB);
        let ratio = total / ideal;
        assert!(
            ratio > 0.8 && ratio < 1.2,
            "cached sequential ratio {ratio}"
        );
    }

    #[test]
    fn random_requests_cost_seek_plus_half_a_rotation() {
        let p = hdd();
        let mut d = Disk::new(p.clone(), 8 * GIB).unwrap();
        let mut rng = Pcg64::seed_from_u64(7);
        let len = 4096;
        let n = 20_000;
        let mut t = 0.0;
        let (mut seek, mut rot, mut total) = (0.0, 0.0, 0.0);
        for _ in 0..n {
            let off = rng.random_range(0..(8 * GIB / len)) * len;
            let s = d.serve(Op::Read, off, len, t);
            // The host thinks for a random time, so arrival phases are random.
            t += s.total() + rng.random_range(0.0..0.01);
            seek += s.seek;
            rot += s.rotation;
            total += s.total();
        }
        let n = n as f64;
        let half_rev = d.revolution() / 2.0;
        assert!(
            ((rot / n) - half_rev).abs() / half_rev < 0.05,
            "rotation {}",
            rot / n
        );
        let avg_seek_ms = seek / n * 1000.0;
        assert!(
            (avg_seek_ms - p.seek_avg_ms).abs() / p.seek_avg_ms < 0.05,
            "seek {avg_seek_ms}"
        );
        let expect = p.overhead_ms / 1000.0 + p.seek_avg_ms / 1000.0 + half_rev;
        assert!(
            ((total / n) - expect).abs() / expect < 0.06,
            "total {}",
            total / n
        );
    }

    #[test]
    fn read_ahead_cache_hits_cost_almost_nothing() {
        let mut d = Disk::new(hdd(), 4 * GIB).unwrap();
        let len = 16 * 1024;
        let miss = d.serve(Op::Read, GIB, len, 0.0);
        assert!(!miss.cache_hit);
        // Wait long enough for the whole segment to be read ahead.
        let t = miss.total() + 0.05;
        // Something else moves the head away; the segment keeps its data.
        let other = d.serve(Op::Read, 3 * GIB, len, t);
        assert!(other.seek > 0.0);
        let t = t + other.total();
        let hit = d.serve(Op::Read, GIB + 4 * len, len, t);
        assert!(hit.cache_hit, "{hit:?}");
        assert!(hit.total() < miss.total() / 10.0, "{hit:?} vs {miss:?}");
        assert_eq!(hit.seek + hit.rotation, 0.0);
        // A write invalidates what it covers.
        d.serve(Op::Write, GIB + 4 * len, len, t + 0.01);
        let again = d.serve(Op::Read, GIB + 4 * len, len, t + 0.02);
        assert!(!again.cache_hit);
    }

    #[test]
    fn two_interleaved_streams_seek_every_time() {
        // The scheduler study's situation: two sequential readers far apart,
        // served alternately, find nothing read ahead and pay a seek each.
        let mut d = Disk::new(hdd(), 4 * GIB).unwrap();
        let len = 64 * 1024;
        let (mut a, mut b) = (GIB, 2 * GIB);
        let mut t = 0.0;
        let mut total = 0.0;
        for _ in 0..200 {
            for off in [&mut a, &mut b] {
                let s = d.serve(Op::Read, *off, len, t);
                t += s.total();
                total += s.total();
                *off += len;
            }
        }
        let per = total / 400.0;
        assert!(per > 4e-3, "per request {per}");
    }

    #[test]
    fn sptf_estimate_prefers_the_near_request() {
        let mut d = Disk::new(hdd(), 4 * GIB).unwrap();
        let s = d.serve(Op::Write, GIB, 4096, 0.0);
        let t = s.total();
        let near = d.positioning_estimate(Op::Write, GIB + 8 * 1024 * 1024, 4096, t);
        let far = d.positioning_estimate(Op::Write, 4 * GIB - 4096, 4096, t);
        // The far one needs a long seek; the near one at most a revolution
        // plus a short seek.
        assert!(far > d.seek_time(0, d.cylinders / 2));
        assert!(near < d.revolution() + d.seek_time(0, d.cylinders / 10));
    }
}
