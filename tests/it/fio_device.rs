//! A block device as a fio job's file, behind the device guard (`crates/base/src/sys/device.rs`): on a
//! loop device the test attaches itself (root only; skipped elsewhere), a run works only
//! when the command line names the device, a mounted device or one carrying a file system
//! is refused before anything is written, and nothing outside the job's range changes.

use crate::common::*;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// A loop device over a 32 MiB image filled with a known pattern; detached on drop.
struct Device {
    dev: Loop,
    img: std::path::PathBuf,
    _scratch: Scratch,
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

fn device(tag: &str) -> Option<Device> {
    if !is_root() {
        skip("needs root to attach a loop device");
        return None;
    }
    let scratch = Scratch::new(tag);
    let img = scratch.path().join("dev.img");
    std::fs::write(&img, pattern(32 << 20)).unwrap();
    match run_ok("losetup", &["-f", "--show", img.to_str().unwrap()]) {
        Ok(dev) => Some(Device {
            dev: Loop(dev),
            img,
            _scratch: scratch,
        }),
        Err(e) => {
            skip(&format!("no loop device: {e}"));
            None
        }
    }
}

fn read_at(p: &Path, off: u64, len: usize) -> Vec<u8> {
    let mut f = std::fs::File::open(p).unwrap();
    f.seek(SeekFrom::Start(off)).unwrap();
    let mut b = vec![0; len];
    f.read_exact(&mut b).unwrap();
    b
}

/// Run a job on `dev` with `args`; (success, all output).
fn run_on(dev: &str, rw: &str, args: &[&str]) -> (bool, String) {
    let d = Scratch::new("devjob");
    let f = d.path().join("dev.fio");
    std::fs::write(
        &f,
        format!("[d]\nfilename={dev}\nrw={rw}\nbs=4k\nsize=4m\nioengine=io_uring\niodepth=8\ndirect=1\n"),
    )
    .unwrap();
    let sentinel = d.path().join("sentinel");
    std::fs::write(&sentinel, b"untouched").unwrap();
    let mut all = vec![
        "run",
        f.to_str().unwrap(),
        "--dir",
        d.s(),
        "--output-format",
        "json",
    ];
    all.extend_from_slice(args);
    let o = run(&all);
    assert_eq!(std::fs::read(&sentinel).unwrap(), b"untouched");
    (o.status.success(), text(&o))
}

#[test]
fn an_allowed_device_is_written_in_its_range_and_an_unnamed_one_is_refused() {
    let Some(d) = device("dev-allowed") else {
        return;
    };
    let dev = d.dev.0.as_str();
    let (ok, out) = run_on(dev, "randwrite", &[]);
    assert!(!ok && out.contains("--allow-device"), "{out}");
    assert_eq!(
        read_at(&d.img, 0, 4 << 20),
        pattern(4 << 20),
        "written without --allow-device"
    );
    let (ok, out) = run_on(dev, "randwrite", &["--allow-device", dev]);
    assert!(ok, "{out}");
    assert!(out.contains("\"total_ios\": 1024"), "{out}");
    // The job's 4 MiB changed; what lies past it did not.
    let _ = std::process::Command::new("sync").status();
    assert_ne!(read_at(&d.img, 0, 4 << 20), pattern(4 << 20));
    let full = pattern(32 << 20);
    assert_eq!(read_at(&d.img, 4 << 20, 28 << 20), full[4 << 20..].to_vec());
    // Its own device in fio's Disk stats.
    let name = dev.trim_start_matches("/dev/");
    assert!(out.contains(&format!("\"name\": \"{name}\"")), "{out}");
    // The device's writes are counted beside its reads: the direct writes reached it.
    assert!(out.contains("\"write_ios\": 1024"), "{out}");
    assert!(out.contains(", read 0 B, wrote 4.0 MiB"), "{out}");
}

#[test]
fn a_signed_or_mounted_device_is_refused_before_anything_is_written() {
    let Some(d) = device("dev-signed") else {
        return;
    };
    let dev = d.dev.0.clone();
    run_ok("mkfs.ext4", &["-q", "-F", &dev]).unwrap();
    let _ = std::process::Command::new("sync").status();
    let before = read_at(&d.img, 0, 4 << 20);
    let (ok, out) = run_on(&dev, "randwrite", &["--allow-device", &dev]);
    assert!(
        !ok && out.contains("ext4") && out.contains("--allow-device-with-data"),
        "{out}"
    );
    assert_eq!(
        read_at(&d.img, 0, 4 << 20),
        before,
        "a file system was overwritten"
    );
    // Reads need only that it is not in use.
    let (ok, out) = run_on(&dev, "randread", &["--allow-device", &dev]);
    assert!(ok, "{out}");
    // Mounted: refused, even with its data given up, and for reads too.
    let mnt = Scratch::new("dev-mnt");
    run_ok("mount", &[&dev, mnt.s()]).unwrap();
    let _m = Mount(mnt.path().to_path_buf());
    for (rw, flag) in [
        ("randwrite", "--allow-device-with-data"),
        ("randread", "--allow-device"),
    ] {
        let (ok, out) = run_on(&dev, rw, &[flag, &dev]);
        assert!(!ok && out.contains("mounted on"), "{rw}: {out}");
    }
    drop(_m);
    let (ok, out) = run_on(&dev, "randwrite", &["--allow-device-with-data", &dev]);
    assert!(ok, "{out}");
}

#[test]
fn size_in_percent_is_a_share_of_the_device() {
    let Some(d) = device("dev-pct") else { return };
    let dev = d.dev.0.as_str();
    let s = Scratch::new("dev-pct-job");
    let f = s.path().join("p.fio");
    std::fs::write(
        &f,
        format!("[p]\nfilename={dev}\nrw=read\nbs=4k\nsize=25%\n"),
    )
    .unwrap();
    let o = run(&[
        "run",
        f.to_str().unwrap(),
        "--dir",
        s.s(),
        "--allow-device",
        dev,
        "--output-format",
        "json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // A quarter of 32 MiB, in 4 KiB reads.
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 2048);
}
