//! The memory estimate a run prints is what it uses: a workload of many flowops in one thread
//! stays within 30% of its estimate (80,000 flowops were estimated at 1.8 GiB and held
//! 5.4 GiB, each flowop's histograms allocated whole). Ten seconds, not one: a histogram
//! grows while its flowop meets new latencies, and after one second the resident size still
//! depended on how fast the machine ran (0.70 to 1.36 of the estimate). The peak resident
//! size is the child's own (`wait4`).

#[path = "it/common.rs"]
mod common;
use common::*;

#[path = "memory/aging.rs"]
mod aging;
#[path = "memory/reclaim.rs"]
mod reclaim;

/// This program's tests take turns: each measures something a neighbour would change (a
/// child's peak resident size; an aging's layout, which CPU and memory pressure beside it
/// must not be what the test's own limit is compared against; the kernel's proactive
/// reclaim, which another experiment pausing and resuming it would turn on under a test).
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Bytes from a size as the reports print it: `250.4 MiB`.
#[test]
fn the_estimate_of_many_flowops_is_within_30_percent_of_the_resident_size() {
    let _alone = alone();
    let dir = Scratch::new("memory-flowops");
    let n = 20_000;
    let mut w = String::from(
        "define fileset name=fs,path=/tmp,entries=100,dirwidth=10,size=4k,prealloc\n\
         define process name=p { thread name=t {\n",
    );
    for i in 0..n {
        w.push_str(&format!("flowop statfile name=s{i},filesetname=fs\n"));
    }
    w.push_str("} }\nrun 1\n");
    let f = dir.path().join("many.f");
    std::fs::write(&f, w).unwrap();
    let (o, rss) = run_with_peak_rss(&[
        "run",
        f.to_str().unwrap(),
        "--dir",
        dir.s(),
        "--duration",
        "10",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (line, est) = memory_estimate(&o);
    assert!(
        line.contains(&format!("{n} flowops")),
        "the estimate counts the flowops: {line}"
    );
    assert_resident_near_estimate(rss, est, &line);
}
