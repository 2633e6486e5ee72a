//! What the deceptive-idleness study reads from the disk under a run: the scheduler's idle
//! window (`-s thinkmin=idle+1ms`), the device's busy time beside the throughput, and each
//! reader's share of the bytes. Needs root for a loop-mounted ext4 whose scheduler the test
//! sets; skips with the reason elsewhere.

use crate::common::{bin, skip, text, LoopExt4};
use serde_json::Value;

fn run_json(dir: &str, json: &std::path::Path, sets: &[&str]) -> (Value, String) {
    let mut args = vec![
        "run",
        "schedseq",
        "--dir",
        dir,
        "--cold",
        "--duration",
        "1",
        "-s",
        "filesize=8m",
        "--json",
        json.to_str().unwrap(),
    ];
    for s in sets {
        args.extend(["-s", s]);
    }
    let o = bin().args(&args).output().unwrap();
    assert!(o.status.success(), "fsbench {args:?}: {}", text(&o));
    let v = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    (v, text(&o))
}

fn set_scheduler(dev: &str, sched: &str) -> Result<(), String> {
    let name = dev.trim_start_matches("/dev/");
    let f = format!("/sys/block/{name}/queue/scheduler");
    std::fs::write(&f, sched).map_err(|e| format!("{f}: {e}"))?;
    let now = std::fs::read_to_string(&f).map_err(|e| e.to_string())?;
    if !now.contains(&format!("[{sched}]")) {
        return Err(format!("{f} reads {now:?} after writing {sched}"));
    }
    Ok(())
}

#[test]
fn idle_window_busy_time_and_shares() {
    let img = match LoopExt4::new("idle", 64) {
        Ok(i) => i,
        Err(why) => return skip(&why),
    };
    if let Err(why) = set_scheduler(&img.dev.0, "bfq") {
        return skip(&format!("no bfq here: {why}"));
    }
    let sys = format!(
        "/sys/block/{}/queue/iosched/slice_idle_us",
        img.dev.0.trim_start_matches("/dev/")
    );
    let window: u64 = std::fs::read_to_string(&sys)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let json = img.scratch.path().join("r.json");
    let (v, out) = run_json(
        img.s(),
        &json,
        &[
            "usemmap=true",
            "burst=4",
            "thinkmin=idle+1ms",
            "thinkmean=idle+1ms",
            "ioprio1=6",
            "ioprio2=4",
        ],
    );
    // The adversary's wait: the window read from sysfs, plus 1 ms, in the variables and notes.
    let want = (window + 1000).to_string();
    assert_eq!(v["variables"]["thinkmin"], want.as_str(), "{out}");
    assert_eq!(v["variables"]["thinkmean"], want.as_str());
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes.iter().any(|n| n
            .starts_with(&format!("idle window: thinkmin=idle+1ms = {want} us ("))
            && n.contains("runs bfq: iosched/slice_idle_us")),
        "{notes:?}"
    );
    // Busy time: the cold readers kept the device busy some of the run, never more than it.
    let busy = v["device_busy_s"].as_f64().expect("device_busy_s");
    let dur = v["duration_s"].as_f64().unwrap();
    assert!(
        busy > 0.0 && busy <= dur * 1.05 + 0.02,
        "busy {busy} of {dur}"
    );
    assert!(out.contains("Device: busy "), "{out}");
    // Shares: one per reader, each its own flowop's bytes, together the whole.
    let p = v["processes"].as_array().expect("processes");
    assert_eq!(p.len(), 2);
    let flowop_bytes = |n: &str| {
        v["flowops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == n)
            .unwrap()["bytes"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(p[0]["name"], "reader1");
    assert_eq!(p[0]["bytes"].as_u64().unwrap(), flowop_bytes("read1"));
    assert_eq!(p[1]["bytes"].as_u64().unwrap(), flowop_bytes("read2"));
    let sum = p[0]["share"].as_f64().unwrap() + p[1]["share"].as_f64().unwrap();
    assert!((sum - 1.0).abs() < 1e-9, "shares sum to {sum}");
    assert!(out.contains("Shares of the bytes: reader1 "), "{out}");

    // A scheduler that does not idle: BFQ's default window, and the note says why.
    set_scheduler(&img.dev.0, "mq-deadline").unwrap();
    let (v, _) = run_json(img.s(), &json, &["thinkmin=idle", "thinkmean=idle"]);
    assert_eq!(v["variables"]["thinkmin"], "8000");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("runs mq-deadline, which does not idle"),
        "{notes}"
    );
}

#[test]
fn idle_window_refused_off_a_block_device() {
    // /dev/shm is tmpfs: no scheduler to read, so the run is refused before it starts.
    if !std::path::Path::new("/dev/shm").is_dir() {
        return skip("no /dev/shm");
    }
    let o = bin()
        .args([
            "run",
            "schedseq",
            "--dir",
            "/dev/shm",
            "-s",
            "thinkmin=idle+1ms",
            "-s",
            "thinkmean=idle+1ms",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let t = text(&o);
    assert!(
        t.contains("-s thinkmin=idle+1ms: /dev/shm is on no block device with a scheduler"),
        "{t}"
    );
}
