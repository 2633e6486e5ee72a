//! Per-day progress of an aging on standard error: a simulated day is `--day-ops`
//! operations, and at the end of a day aging says where it is (operations against the
//! run's total, rate and time left, bytes written, fullness, live files, distances; every
//! `--layout-every` days the layout score too), at most once a second, and at least every
//! half minute within a long day, so a run of a million operations shows where it is.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::plan::{Distances, Phase, Planner};
use fsbench_base::units::human_bytes_u64;
use fsbench_base::walk::WalkOptions;

/// What a progress line needs besides the planner.
pub struct Totals {
    /// Operations done so far in this run.
    pub done: u64,
    /// Churn operations done, and at most.
    pub churn: u64,
    pub max_churn: u64,
    /// Bytes written so far.
    pub written: u64,
}

pub struct Progress {
    quiet: bool,
    day_ops: u64,
    layout_every: u64,
    fill: f64,
    root: PathBuf,
    /// The day the last operation fell in.
    day: u64,
    t0: Instant,
    last_line: Instant,
}

impl Progress {
    pub fn new(
        quiet: bool,
        (day_ops, layout_every): (u64, u64),
        fill: f64,
        root: &Path,
        clock: u64,
    ) -> Progress {
        let day_ops = day_ops.max(1);
        Progress {
            quiet,
            day_ops,
            layout_every,
            fill,
            root: root.to_path_buf(),
            day: clock / day_ops,
            t0: Instant::now(),
            last_line: Instant::now(),
        }
    }

    /// After an operation: a line when a day ended (at most one a second), or when none was
    /// shown for half a minute.
    pub fn tick(&mut self, pl: &Planner, t: &Totals) {
        if self.quiet {
            return;
        }
        let day = pl.clock / self.day_ops;
        let day_ended = day > self.day;
        self.day = day;
        let since = self.last_line.elapsed();
        let layout_day =
            day_ended && self.layout_every > 0 && day.is_multiple_of(self.layout_every);
        if !(day_ended && (since >= Duration::from_secs(1) || layout_day))
            && since < Duration::from_secs(30)
        {
            return;
        }
        self.last_line = Instant::now();
        let mut line = self.line(pl, t, day_ended);
        if layout_day {
            line += &self.layout();
        }
        fsbench_base::errln!("{line}");
    }

    fn line(&self, pl: &Planner, t: &Totals, day_ended: bool) -> String {
        let secs = self.t0.elapsed().as_secs_f64().max(1e-9);
        let rate = t.done as f64 / secs;
        let (full, _, _) = super::exec::fullness(&self.root).unwrap_or((0.0, 0, 0));
        let phase = match pl.phase {
            Phase::Fill => "fill".to_string(),
            Phase::Churn => format!("churn {} of {}", t.churn, t.max_churn),
        };
        let left = match pl.phase {
            Phase::Churn if rate > 0.0 => format!(
                ", about {:.0} s left",
                t.max_churn.saturating_sub(t.churn) as f64 / rate
            ),
            _ => String::new(),
        };
        format!(
            "age: day {}{}: {} operations ({phase}; {rate:.0}/s{left}), {} written, {:.1}% full (target {:.0}%), {} files, distance {}",
            self.day,
            if day_ended { "" } else { " so far" },
            t.done,
            human_bytes_u64(t.written),
            full * 100.0,
            self.fill * 100.0,
            pl.live_files(),
            fmt_dist(&pl.distances()),
        )
    }

    /// The layout score of the aged directory now (FIEMAP without syncing: whatever is not
    /// written back yet is left out, and nothing is written back by looking).
    fn layout(&self) -> String {
        let opts = WalkOptions {
            cross_mounts: false,
            threads: 1,
        };
        match fsbench_engine::layout::layout(&self.root, &opts, false, 0) {
            Ok(r) => format!(
                ", layout score {} ({} fragments)",
                r.score.map_or("-".into(), |s| format!("{s:.4}")),
                r.fragments
            ),
            Err(_) => String::new(),
        }
    }
}

pub fn fmt_dist(d: &Distances) -> String {
    let mut s = format!("size {:.3} depth {:.3}", d.size.tv, d.depth.tv);
    if let Some(a) = d.age {
        s += &format!(" age {:.3}", a.tv);
    }
    s
}
