//! Content control through the real binary: `compress=`/`dedupe=` on a fileset shape the data
//! laid out on disk (checked here by reading the files back), the results report the measured
//! shares, and bad values are refused at check time with file:line:column.

use crate::common::*;
use std::collections::HashSet;
use std::path::Path;

fn workload(dir: &Scratch, name: &str, attrs: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(
        &p,
        format!(
            "set $dir=/tmp\ndefine fileset name=data,path=$dir,entries=100,dirwidth=10,size=64k,prealloc{attrs}\n\
             define process name=p {{\n thread name=t {{\n  flowop statfile name=st,filesetname=data\n }}\n}}\nrun 1\n"
        ),
    )
    .unwrap();
    p.to_str().unwrap().to_string()
}

/// Every file's bytes under `root`, as 4 KiB blocks.
fn blocks(root: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                let data = std::fs::read(e.path()).unwrap();
                out.extend(data.chunks(4096).map(|c| c.to_vec()));
            }
        }
    }
    out
}

#[test]
fn laid_out_files_have_the_requested_compress_and_dedupe_shares() {
    let dir = Scratch::new("content-ctl");
    let target = Scratch::new("content-ctl-target");
    let wl = workload(&dir, "c.f", ",compress=50,dedupe=50");
    let json = dir.path().join("r.json");
    let o = run(&[
        "run",
        &wl,
        "--dir",
        target.s(),
        "--keep",
        "--json",
        json.to_str().unwrap(),
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("content of data: compress"), "{out}");
    let rd = std::fs::read_dir(target.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let b = blocks(&rd.join("data"));
    assert_eq!(b.len(), 100 * 16);
    // Measured here independently: LZ4 on each block, distinct blocks by content.
    let total: usize = b.iter().map(|x| x.len()).sum();
    let packed: usize = b.iter().map(|x| lz4_flex::block::compress(x).len()).sum();
    let compress = 100.0 * (1.0 - packed as f64 / total as f64);
    let distinct: HashSet<&Vec<u8>> = b.iter().collect();
    let dedupe = 100.0 * (1.0 - distinct.len() as f64 / b.len() as f64);
    assert!((compress - 50.0).abs() <= 5.0, "compress {compress:.1}");
    assert!((dedupe - 50.0).abs() <= 5.0, "dedupe {dedupe:.1}");
    // The results carry the run's own measurement, which agrees.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let c = &v["layout"]["content"][0];
    assert_eq!(c["fileset"], "data");
    assert_eq!(c["requested_compress_pct"], 50);
    let rc = c["compress_pct"].as_f64().unwrap();
    let rdd = c["dedupe_pct"].as_f64().unwrap();
    assert!((rc - 50.0).abs() <= 5.0, "reported compress {rc}");
    assert!((rdd - 50.0).abs() <= 5.0, "reported dedupe {rdd}");
}

#[test]
fn default_content_is_random_and_unique() {
    let dir = Scratch::new("content-rand");
    let target = Scratch::new("content-rand-target");
    let wl = workload(&dir, "r.f", "");
    let o = run(&["run", &wl, "--dir", target.s(), "--keep", "-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let rd = std::fs::read_dir(target.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let b = blocks(&rd.join("data"));
    let distinct: HashSet<&Vec<u8>> = b.iter().collect();
    assert_eq!(distinct.len(), b.len(), "no block repeats");
    let packed: usize = b.iter().map(|x| lz4_flex::block::compress(x).len()).sum();
    assert!(packed >= b.len() * 4096, "random data does not compress");
}

#[test]
fn bad_content_values_are_refused_with_their_position() {
    let dir = Scratch::new("content-bad");
    for (attrs, col, msg) in [
        (
            ",compress=101",
            78,
            "`compress` is a percentage (0-100), found 101",
        ),
        (",dedupe=-1", 78, "percentage"),
        (",content=lumpy", 78, "unknown content `lumpy`"),
    ] {
        let wl = workload(&dir, "bad.f", attrs);
        let o = run(&["check", &wl]);
        let out = text(&o);
        assert!(!o.status.success(), "{attrs} accepted: {out}");
        assert!(out.contains(msg), "{attrs}: {out}");
        assert!(out.contains(&format!("bad.f:2:{col}")), "{attrs}: {out}");
    }
    // Known names and in-range values check clean.
    let wl = workload(&dir, "ok.f", ",content=zero,compress=0,dedupe=100");
    let o = run(&["check", &wl]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn writes_during_the_run_follow_the_flowop_content_and_report_what_they_achieved() {
    // A fileset of plain random data, rewritten by a flowop that asks for 60% compressible
    // and 30% duplicate blocks, and appended to by one that inherits nothing (plain random,
    // no content section). The results say what a sample of the written data achieved.
    let s = Scratch::new("content-flowop");
    let w = s.path().join("w.f");
    std::fs::write(
        &w,
        "set $dir=/tmp\n\
         define fileset name=data,path=$dir,entries=200,dirwidth=20,size=64k,prealloc\n\
         define process name=p {\n thread name=t {\n\
           flowop openfile name=open1,filesetname=data,fd=1\n\
           flowop writewholefile name=rewrite,fd=1,iosize=64k,compress=60,dedupe=30\n\
           flowop closefile name=close1,fd=1\n\
           flowop openfile name=open2,filesetname=data,fd=1\n\
           flowop appendfile name=grow,fd=1,iosize=8k\n\
           flowop closefile name=close2,fd=1\n\
         }\n}\n",
    )
    .unwrap();
    let json = s.path().join("r.json");
    let o = run(&[
        "run",
        w.to_str().unwrap(),
        "--dir",
        s.s(),
        "--duration",
        "1",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let flowop = |n: &str| {
        r["flowops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == n)
            .unwrap()
            .clone()
    };
    let c = &flowop("rewrite")["content"];
    assert_eq!(c["requested_compress_pct"], 60, "{c}");
    assert_eq!(c["requested_dedupe_pct"], 30, "{c}");
    let got_c = c["compress_pct"].as_f64().unwrap();
    let got_d = c["dedupe_pct"].as_f64().unwrap();
    assert!((got_c - 60.0).abs() <= 5.0, "compress {got_c}: {c}");
    assert!((got_d - 30.0).abs() <= 5.0, "dedupe {got_d}: {c}");
    assert!(c["sample_bytes"].as_u64().unwrap() >= 1 << 20, "{c}");
    assert!(flowop("grow").get("content").is_none());
}

#[test]
fn content_attributes_on_a_read_are_refused_with_their_position() {
    let s = Scratch::new("content-read");
    let w = s.path().join("w.f");
    std::fs::write(
        &w,
        "define fileset name=data,path=/tmp,entries=10,dirwidth=10,size=4k,prealloc\n\
         define process name=p {\n thread name=t {\n\
           flowop read name=r,filesetname=data,iosize=4k,compress=50\n\
         }\n}\n",
    )
    .unwrap();
    let o = run(&["check", w.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("flowop `read` does not take `compress`") && e.contains("w.f:4:47"),
        "{e}"
    );
}
