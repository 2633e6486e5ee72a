//! A fileset of a hundred million entries is planned and run (create, stat and delete over
//! it) in about 2 GB, and the memory estimate the run prints is what it holds. The peak
//! resident size is the child's own (`wait4`).

#[path = "it/common.rs"]
mod common;
use common::*;

const ENTRIES: u64 = 100_000_000;

fn available_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|k| k.parse::<u64>().ok())
        })
        .map_or(0, |k| k * 1024)
}

#[test]
fn a_hundred_million_entries_fit_their_estimate() {
    if available_bytes() < 6 << 30 {
        skip("needs 6 GiB of available memory");
        return;
    }
    let dir = Scratch::new("memory-fileset");
    let w = format!(
        "define fileset name=fs,path=/tmp,entries={ENTRIES},dirwidth=10000,size=4k,prealloc=0\n\
         define process name=p {{ thread name=t {{\n\
         flowop createfile name=c,filesetname=fs,fd=1\n\
         flowop closefile name=cl,fd=1\n\
         flowop statfile name=s,filesetname=fs\n\
         flowop deletefile name=d,filesetname=fs\n\
         }} }}\nrun 1\n"
    );
    let f = dir.path().join("huge.f");
    std::fs::write(&f, w).unwrap();
    let (o, rss) = run_with_peak_rss(&[
        "run",
        f.to_str().unwrap(),
        "--dir",
        dir.s(),
        "--duration",
        "1",
        "--continue-when-exhausted",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (line, est) = memory_estimate(&o);
    assert!(
        rss <= 2.4e9,
        "{ENTRIES} entries held {:.2} GB (at most 2.4 GB: 24 bytes an entry)",
        rss / 1e9
    );
    assert_resident_near_estimate(rss, est, &line);
}
