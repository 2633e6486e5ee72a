//! The kernel's proactive reclaim by DAMON (Data Access MONitor): a `kdamond` thread that
//! pages out memory it judges idle, with or without memory pressure. Its judgement is per
//! region of physical memory, so page-cache pages read a moment ago can go with a region
//! that has been idle for long: a warm run then reads the device again. On the machine the
//! shipped studies were run on, a merged overlay's warm `find` read the disk in 10 of 40
//! tries with DAMON's pageout on and in none of 15 with it paused (docs/experiments.md,
//! "Proactive reclaim").
//!
//! Read from sysfs: the admin interface (`/sys/kernel/mm/damon/admin/kdamonds/N`, a
//! kdamond whose `state` is `on` with a `pageout` scheme) and the `damon_reclaim` module
//! (`/sys/module/damon_reclaim/parameters/enabled`).

use std::path::{Path, PathBuf};

/// Where the admin interface keeps its kdamonds.
pub const KDAMONDS: &str = "/sys/kernel/mm/damon/admin/kdamonds";
const RECLAIM_MODULE: &str = "/sys/module/damon_reclaim/parameters";

/// One DAMON reclaimer that is running.
#[derive(Debug, Clone, PartialEq)]
pub struct Reclaimer {
    /// `kdamond N` (admin interface) or `damon_reclaim` (the module).
    pub name: String,
    /// The admin kdamond's index, which can be paused (`None` for the module).
    pub kdamond: Option<u32>,
    /// Regions idle this long are paged out (seconds), where known.
    pub min_age_s: Option<f64>,
    /// At most this many bytes per quota interval, and the interval (ms), where set.
    pub quota: Option<(u64, u64)>,
}

impl Reclaimer {
    pub fn describe(&self) -> String {
        let mut s = format!("{}: pageout", self.name);
        if let Some(a) = self.min_age_s {
            s.push_str(&format!(" of regions idle {a:.0} s"));
        }
        if let Some((b, ms)) = self.quota {
            s.push_str(&format!(", up to {} MiB per {ms} ms", b >> 20));
        }
        s
    }
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

fn num(p: &Path) -> Option<u64> {
    read(p)?.parse().ok()
}

fn numbered(dir: &Path) -> Vec<(u32, PathBuf)> {
    let mut v: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().parse().ok()?;
                    Some((n, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The pageout schemes of the running admin kdamonds under `root` (one entry per scheme).
pub fn admin_reclaimers(root: &Path) -> Vec<Reclaimer> {
    let mut out = Vec::new();
    for (n, kd) in numbered(root) {
        if read(&kd.join("state")).as_deref() != Some("on") {
            continue;
        }
        for (_, ctx) in numbered(&kd.join("contexts")) {
            let aggr_us = num(&ctx.join("monitoring_attrs/intervals/aggr_us"));
            for (_, sch) in numbered(&ctx.join("schemes")) {
                if read(&sch.join("action")).as_deref() != Some("pageout") {
                    continue;
                }
                let age = num(&sch.join("access_pattern/age/min"));
                let bytes = num(&sch.join("quotas/bytes")).filter(|b| *b > 0);
                let ms = num(&sch.join("quotas/reset_interval_ms"));
                out.push(Reclaimer {
                    name: format!("kdamond {n}"),
                    kdamond: Some(n),
                    min_age_s: age.zip(aggr_us).map(|(a, us)| a as f64 * us as f64 / 1e6),
                    quota: bytes.zip(ms),
                });
            }
        }
    }
    out
}

/// Every DAMON reclaimer running on this machine.
pub fn reclaimers() -> Vec<Reclaimer> {
    let mut v = admin_reclaimers(Path::new(KDAMONDS));
    let m = Path::new(RECLAIM_MODULE);
    if read(&m.join("enabled")).as_deref() == Some("Y") {
        v.push(Reclaimer {
            name: "damon_reclaim".into(),
            kdamond: None,
            min_age_s: num(&m.join("min_age")).map(|us| us as f64 / 1e6),
            quota: num(&m.join("quota_sz"))
                .filter(|b| *b > 0)
                .zip(num(&m.join("quota_reset_interval_ms"))),
        });
    }
    v
}

/// One line for the run's host facts: empty when no reclaimer runs.
pub fn summary() -> String {
    reclaimers()
        .iter()
        .map(Reclaimer::describe)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The file that turns reclaimer `kdamond` on and off (`None`: the `damon_reclaim`
/// module), and the words for on and off in it.
fn switch(kdamond: Option<u32>) -> (PathBuf, &'static str, &'static str) {
    match kdamond {
        Some(n) => (
            Path::new(KDAMONDS).join(n.to_string()).join("state"),
            "on",
            "off",
        ),
        None => (Path::new(RECLAIM_MODULE).join("enabled"), "Y", "N"),
    }
}

/// Turn a reclaimer on or off.
pub fn set_running(kdamond: Option<u32>, on: bool) -> std::io::Result<()> {
    let (p, yes, no) = switch(kdamond);
    std::fs::write(&p, if on { yes } else { no })
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", p.display())))
}

/// Whether a reclaimer is off now (`None`: its switch cannot be read).
pub fn is_off(kdamond: Option<u32>) -> Option<bool> {
    let (p, _, no) = switch(kdamond);
    read(&p).map(|v| v == no)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(p: &Path, v: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, v).unwrap();
    }

    #[test]
    fn pageout_schemes_of_running_kdamonds_are_found() {
        let root = std::env::temp_dir().join(format!("fsbench-damon-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        // kdamond 0: on, one pageout scheme and one that only collects statistics.
        let c = root.join("0/contexts/0");
        put(&root.join("0/state"), "on\n");
        put(&c.join("monitoring_attrs/intervals/aggr_us"), "5000000\n");
        put(&c.join("schemes/0/action"), "pageout\n");
        put(&c.join("schemes/0/access_pattern/age/min"), "12\n");
        put(&c.join("schemes/0/quotas/bytes"), "134217728\n");
        put(&c.join("schemes/0/quotas/reset_interval_ms"), "1000\n");
        put(&c.join("schemes/1/action"), "stat\n");
        // kdamond 1: a pageout scheme, but off.
        put(&root.join("1/state"), "off\n");
        put(&root.join("1/contexts/0/schemes/0/action"), "pageout\n");
        let v = admin_reclaimers(&root);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kdamond, Some(0));
        assert_eq!(v[0].min_age_s, Some(60.0));
        assert_eq!(v[0].quota, Some((128 << 20, 1000)));
        assert_eq!(
            v[0].describe(),
            "kdamond 0: pageout of regions idle 60 s, up to 128 MiB per 1000 ms"
        );
        std::fs::remove_dir_all(&root).unwrap();
        assert!(admin_reclaimers(&root).is_empty());
    }
}
