//! fio's verify format, proven against fio itself (Debian's `fio`, installed by
//! `.ci/apt-packages`): a file a fio job file writes in fsbench with `verify=` checks in
//! fio (a read job with the same `verify=`, and `--verify_only`), a file fio writes checks
//! in fsbench, for every checksum type; and a corrupted block, data or header, is reported
//! by both in the same words.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

const KINDS: [&str; 16] = [
    "crc32c",
    "crc32c-intel",
    "md5",
    "crc64",
    "crc32",
    "crc16",
    "crc7",
    "sha1",
    "sha256",
    "sha512",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "xxhash",
    "meta",
];

fn has_fio() -> bool {
    run_ok("fio", &["--version"]).is_ok()
}

/// fsbench writes `data` (64 random 4 KiB blocks, `verify=kind`, no verify phase) in a
/// run directory below `d` that it keeps, and the file is moved to `d/src/data`.
fn fsbench_writes(d: &Path, kind: &str) -> PathBuf {
    let job = d.join("w.fio");
    let body =
        format!("[w]\nrw=randwrite\nbs=4k\nsize=256k\nfilename=data\nverify={kind}\ndo_verify=0\n");
    std::fs::write(&job, body).unwrap();
    let json = d.join("w.json");
    let runs = d.join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let o = run(&[
        "run",
        job.to_str().unwrap(),
        "--dir",
        runs.to_str().unwrap(),
        "--keep",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{kind}: {}", text(&o));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let src = d.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let to = src.join("data");
    std::fs::rename(Path::new(r["run_dir"].as_str().unwrap()).join("data"), &to).unwrap();
    to
}

/// fio writes `d/src/w.0.0` the same way.
fn fio_writes(d: &Path, kind: &str) -> PathBuf {
    let src = d.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let o = std::process::Command::new("fio")
        .args([
            "--name=w",
            "--rw=randwrite",
            "--bs=4k",
            "--size=256k",
            "--do_verify=0",
        ])
        .arg(format!("--directory={}", src.display()))
        .arg(format!("--verify={kind}"))
        .output()
        .unwrap();
    assert!(o.status.success(), "fio {kind}: {}", text(&o));
    src.join("w.0.0")
}

/// fio reads `path` whole checking `verify=kind` (`--verify_only` of the writing job
/// instead when `only`).
fn fio_checks(path: &Path, kind: &str, only: bool) -> Output {
    let rw = if only { "--rw=randwrite" } else { "--rw=read" };
    let mut c = std::process::Command::new("fio");
    // In the file's directory: a failing fio saves its verify state in the current one.
    c.current_dir(path.parent().unwrap());
    c.args(["--name=r", rw, "--bs=4k", "--size=256k"])
        .arg(format!("--filename={}", path.display()))
        .arg(format!("--verify={kind}"));
    if only {
        c.arg("--verify_only");
    }
    c.output().unwrap()
}

/// fsbench reads the files of `path`'s directory (`opendir`) checking `verify=kind`;
/// its output and the blocks it checked.
fn fsbench_checks(path: &Path, kind: &str) -> (Output, u64) {
    let d = path.parent().unwrap().parent().unwrap();
    let job = d.join("r.fio");
    let dir = path.parent().unwrap().display();
    std::fs::write(
        &job,
        format!("[r]\nrw=read\nbs=4k\nopendir={dir}\nverify={kind}\n"),
    )
    .unwrap();
    let runs = d.join("reads");
    std::fs::create_dir_all(&runs).unwrap();
    let json = d.join("r.json");
    let o = run(&[
        "run",
        job.to_str().unwrap(),
        "--dir",
        runs.to_str().unwrap(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let blocks = r["fio_jobs"][0]["verify"]["blocks"].as_u64().unwrap();
    (o, blocks)
}

/// The lines of fio's verify failures in `o` (what both tools print for a bad block).
fn failure_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| !l.contains("fsbench:"))
        .filter(|l| {
            l.contains("verify failed at") || l.contains("verify: bad") || l.contains(" CRC: ")
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn blocks_either_tool_writes_check_in_the_other_for_every_type() {
    if !has_fio() {
        return skip("fio is not installed (Debian: apt-get install fio)");
    }
    for kind in KINDS {
        let d = Scratch::new(&format!("fv-{kind}"));
        let ours = fsbench_writes(d.path(), kind);
        let o = fio_checks(&ours, kind, false);
        assert!(
            o.status.success(),
            "fio checking fsbench's {kind}: {}",
            text(&o)
        );
        let o = fio_checks(&ours, kind, true);
        assert!(
            o.status.success(),
            "fio --verify_only of fsbench's {kind}: {}",
            text(&o)
        );
        let e = Scratch::new(&format!("fv-fio-{kind}"));
        let theirs = fio_writes(e.path(), kind);
        let (o, blocks) = fsbench_checks(&theirs, kind);
        assert!(
            o.status.success(),
            "fsbench checking fio's {kind}: {}",
            text(&o)
        );
        assert_eq!(blocks, 64, "{kind}");
    }
}

#[test]
fn a_corrupted_block_is_reported_by_both_in_the_same_words() {
    if !has_fio() {
        return skip("fio is not installed (Debian: apt-get install fio)");
    }
    // A byte of the third block's data; a byte of the second block's header (its offset).
    for (kind, at, what) in [
        ("crc32c", 8192 + 3000, "crc32c: verify failed at file"),
        ("md5", 8192 + 3000, "md5: verify failed at file"),
        ("crc32c", 4096 + 20, "verify: bad header offset"),
    ] {
        let d = Scratch::new(&format!("fv-bad-{kind}"));
        let e = Scratch::new(&format!("fv-bad-fio-{kind}"));
        for path in [fsbench_writes(d.path(), kind), fio_writes(e.path(), kind)] {
            let mut b = std::fs::read(&path).unwrap();
            b[at] ^= 0x5a;
            std::fs::write(&path, b).unwrap();
            let fio = fio_checks(&path, kind, false);
            assert!(!fio.status.success(), "{kind}: {}", text(&fio));
            let (ours, _) = fsbench_checks(&path, kind);
            assert!(!ours.status.success(), "{kind}: {}", text(&ours));
            let (a, b) = (failure_lines(&fio), failure_lines(&ours));
            assert!(
                !a.is_empty() && a[0].starts_with(what),
                "{kind}: fio said {a:?}"
            );
            assert_eq!(a, b, "{kind}: fio's lines, then fsbench's");
            let block = at as u64 / 4096 * 4096;
            assert!(a[0].contains(&format!("offset {block}")), "{a:?}");
        }
    }
}

#[test]
fn the_verify_phase_reads_from_the_disk_as_fio_does() {
    // fio's do_verify syncs each file and drops its cached pages before reading back,
    // "to make sure we really read from disk": the 32 MiB written come back from the
    // device, not from the page cache they were just written to.
    let d = Scratch::new("fv-disk");
    let job = d.path().join("v.fio");
    std::fs::write(
        &job,
        "[v]\nrw=write\nbs=64k\nsize=32m\nioengine=psync\nverify=crc32c\n",
    )
    .unwrap();
    let json = d.path().join("v.json");
    let o = run(&[
        "run",
        job.to_str().unwrap(),
        "--dir",
        d.s(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let Some(read) = r["device_read_bytes"].as_u64() else {
        return skip(
            "no block device under the scratch directory (tmpfs?): nothing to read back from",
        );
    };
    assert_eq!(r["fio_jobs"][0]["verify"]["blocks"], 512);
    assert!(read >= 32 << 20, "the device read {read} bytes");
}
