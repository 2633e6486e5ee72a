//! fio job files through the real binary: what each option makes fsbench read and write
//! (files, names, sizes, operation and byte counts, checked against what fio does for the
//! same job), fio's output shapes, and every refused option or malformed line naming its
//! file, line and column.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

/// Run `job` (a job file's text) in a scratch directory, keeping the run directory;
/// returns the results JSON and the files the run directory holds (name, size).
fn run_job(tag: &str, job: &str, extra: &[&str]) -> (Value, Vec<(String, u64)>, Scratch) {
    let d = Scratch::new(tag);
    let f = d.path().join(format!("{tag}.fio"));
    std::fs::write(&f, job).unwrap();
    let json = d.path().join("r.json");
    let mut args = vec![
        "run",
        f.to_str().unwrap(),
        "--dir",
        d.s(),
        "--keep",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{tag}: {}", text(&o));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rundir = Path::new(r["run_dir"].as_str().unwrap()).to_path_buf();
    let mut files: Vec<(String, u64)> = std::fs::read_dir(&rundir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| !e.file_name().to_string_lossy().starts_with(".fsbench"))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    files.sort();
    (r, files, d)
}

/// (ops, bytes) of the statistic `name`; (0, 0) when the run has none.
fn counted(r: &Value, name: &str) -> (u64, u64) {
    r["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .map_or((0, 0), |f| {
            (f["ops"].as_u64().unwrap(), f["bytes"].as_u64().unwrap())
        })
}

fn files(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    list.iter().map(|(n, s)| (n.to_string(), *s)).collect()
}

#[test]
fn a_job_file_runs_end_to_end_with_fios_counts_and_file_names() {
    let job = "; two jobs at once\n[global]\nioengine=psync\n\n[seq]\nrw=read\nbs=4k\nsize=256k\nnrfiles=2\n\n[rand]\nrw=randwrite\nbs=8k\nsize=128k\nfsync=4\n";
    let (r, f, _d) = run_job("e2e", job, &[]);
    // fio: each file size/nrfiles, named job.clone.file, read ones written whole first.
    assert_eq!(
        f,
        files(&[
            ("rand.0.0", 128 << 10),
            ("seq.0.0", 128 << 10),
            ("seq.0.1", 128 << 10)
        ])
    );
    assert_eq!(counted(&r, "seq read"), (64, 256 << 10));
    assert_eq!(counted(&r, "rand write"), (16, 128 << 10));
    // An fsync after the 4th, 8th and 12th write; after the 16th the job is done (fio: 3).
    assert_eq!(counted(&r, "rand sync").0, 3);
    assert_eq!(r["layout"]["bytes_written"], 256 << 10);
    // The options each job ran with, [global]'s included, are the results' variables.
    assert_eq!(r["variables"]["seq.bs"], "4k");
    assert_eq!(r["variables"]["rand.ioengine"], "psync");
    assert_eq!(r["variables"]["rand.fsync"], "4");
}

#[test]
fn output_format_json_is_fios_shape_and_text_is_fios_summary() {
    let d = Scratch::new("fiojson");
    let o = run(&[
        "run",
        "--fio",
        "rw=randread bs=4k size=64k",
        "--dir",
        d.s(),
        "--output-format",
        "json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("fio JSON alone on stdout");
    let job = &v["jobs"][0];
    assert_eq!(job["jobname"], "fio");
    assert_eq!(job["read"]["total_ios"], 16);
    assert_eq!(job["read"]["io_bytes"], 65536);
    assert_eq!(job["write"]["total_ios"], 0);
    assert!(job["read"]["iops"].as_f64().unwrap() > 0.0);
    let pct = &job["read"]["clat_ns"]["percentile"];
    assert!(pct["50.000000"].as_u64().unwrap() > 0, "{pct}");
    assert!(pct["99.990000"].as_u64().unwrap() >= pct["50.000000"].as_u64().unwrap());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("read: IOPS="), "{err}");
    // fio's unit: ns while the fastest is under 2 µs, as for these cached reads.
    assert!(err.contains("clat percentiles ("), "{err}");
}

#[test]
fn each_option_reads_and_writes_what_fio_does() {
    // (job, statistic, ops, bytes): the counts fio 3.33 gives for the same job.
    let cases: &[(&str, &str, u64, u64)] = &[
        // rw=read:4k skips 4 KiB after each read and wraps at the end until size= is done.
        (
            "[j]\nrw=read:4k\nbs=4k\nsize=128k\n",
            "j read",
            32,
            128 << 10,
        ),
        (
            "[j]\nrw=write\nbs=4k\nsize=64k\nio_size=192k\n",
            "j write",
            48,
            192 << 10,
        ),
        (
            "[j]\nrw=randread\nbs=4k\nsize=64k\nloops=3\n",
            "j read",
            48,
            192 << 10,
        ),
        (
            "[j]\nrw=read\nbs=4k\nsize=64k\nnumber_ios=5\n",
            "j read",
            5,
            20 << 10,
        ),
        (
            "[j]\nrw=randread\nbs=4k\nsize=64k\nnorandommap\n",
            "j read",
            16,
            64 << 10,
        ),
        (
            "[j]\nrw=randread\nbs=4k\nsize=64k\nrandom_distribution=zipf:1.2\n",
            "j read",
            16,
            64 << 10,
        ),
        (
            "[j]\nrw=randwrite\nbs=4k\nsize=64k\nrandom_distribution=pareto:0.3:0.5\n",
            "j write",
            16,
            64 << 10,
        ),
        (
            "[j]\nrw=read\nbs=4k\nfilesize=32k\nnrfiles=3\n",
            "j read",
            24,
            96 << 10,
        ),
        (
            "[j]\nreadwrite=randread\nblocksize=16k\nsize=64k\n",
            "j read",
            4,
            64 << 10,
        ),
        (
            "[j]\nrw=read\nbs=4k,8k\nsize=64k\nkb_base=1000\n",
            "j read",
            16,
            64000,
        ),
        (
            "[j]\nrw=write\nbs=4k\nsize=64k\nsync=dsync\nioengine=sync\n",
            "j write",
            16,
            64 << 10,
        ),
    ];
    for (i, (job, stat, ops, bytes)) in cases.iter().enumerate() {
        let (r, _, _d) = run_job(&format!("opt{i}"), job, &[]);
        assert_eq!(counted(&r, stat), (*ops, *bytes), "{job}");
    }
    // Random block sizes: the bytes of a pass exactly, in blocks of the sizes given.
    for job in [
        "[j]\nrw=randwrite\nbssplit=4k/50:16k/50\nsize=256k\n",
        "[j]\nrw=read\nbsrange=4k-16k\nsize=256k\n",
    ] {
        let (r, _, _d) = run_job("split", job, &[]);
        let stat = if job.contains("write") {
            "j write"
        } else {
            "j read"
        };
        let (ops, bytes) = counted(&r, stat);
        assert_eq!(bytes, 256 << 10, "{job}");
        assert!((16..=64).contains(&ops), "{job}: {ops} ops");
    }
    // A mix: the total of a pass, shared between reads and writes.
    let (r, _, _d) = run_job(
        "mix",
        "[j]\nrw=randrw\nrwmixread=70\nbs=4k\nsize=400k\n",
        &[],
    );
    let (rd, wr) = (counted(&r, "j read"), counted(&r, "j write"));
    assert_eq!(rd.0 + wr.0, 100);
    assert!(rd.0 > wr.0, "{rd:?} {wr:?}");
    // fdatasync every 4 writes and end_fsync are counted apart from fsync.
    let (r, _, _d) = run_job(
        "dsync",
        "[j]\nrw=write\nbs=4k\nsize=64k\nfdatasync=4\nend_fsync=1\n",
        &[],
    );
    assert_eq!(counted(&r, "j datasync").0, 3);
    assert_eq!(counted(&r, "j end-sync").0, 1);
    assert_eq!(counted(&r, "j sync").0, 0);
}

/// 4 KiB blocks of `path` holding data (not all zeros): the blocks a job wrote.
fn written_blocks(path: &Path) -> Vec<u64> {
    let data = std::fs::read(path).unwrap();
    data.chunks(4096)
        .enumerate()
        .filter(|(_, c)| c.iter().any(|b| *b != 0))
        .map(|(i, _)| i as u64)
        .collect()
}

#[test]
fn zoned_and_normal_offsets_land_where_fio_draws_them() {
    // zoned: every write in the first quarter of the 1 MiB file (not laid out, without a
    // reservation: its size is where the last write ended).
    let job = |dist: &str, map: &str| {
        format!(
            "[j]\nrw=randwrite\nbs=4k\nsize=1m\nfallocate=none\n{map}random_distribution={dist}\n"
        )
    };
    let (r, f, d) = run_job("zoned", &job("zoned:100/25", "norandommap\n"), &[]);
    assert_eq!(counted(&r, "j write"), (256, 1 << 20));
    let path = Path::new(r["run_dir"].as_str().unwrap()).join("j.0.0");
    assert!(f[0].1 <= 256 << 10, "{f:?}");
    let quarter = written_blocks(&path);
    assert!(
        quarter.iter().all(|b| *b < 64) && quarter.len() > 32,
        "{quarter:?}"
    );
    drop(d);
    // zoned_abs: sizes in bytes, per direction (reads first, then writes).
    let (r, f, _d) = run_job(
        "zabs",
        &job("zoned_abs:100/1m,50/64k:50/64k", "norandommap\n"),
        &[],
    );
    assert_eq!(counted(&r, "j write").0, 256);
    assert!(f[0].1 <= 128 << 10, "{f:?}");
    // With the random map (fio's default) a zoned pass still does every block once.
    let (r, f, d) = run_job("zmap", &job("zoned:90/10:10/90", ""), &[]);
    assert_eq!(counted(&r, "j write"), (256, 1 << 20));
    let path = Path::new(r["run_dir"].as_str().unwrap()).join("j.0.0");
    assert_eq!(f[0].1, 1 << 20);
    assert_eq!(written_blocks(&path).len(), 256);
    drop(d);
    // normal: 256 writes gather on fewer blocks than 256 uniform ones do (about 162).
    let distinct = |dist: &str, tag: &str| {
        let (r, _, _d) = run_job(tag, &job(dist, "norandommap\n"), &[]);
        assert_eq!(counted(&r, "j write").0, 256);
        written_blocks(&Path::new(r["run_dir"].as_str().unwrap()).join("j.0.0")).len()
    };
    let uniform = distinct("random", "uni");
    let normal = distinct("normal", "normal");
    assert!(uniform > 130, "{uniform}");
    assert!(
        normal < 110 && normal > 20,
        "normal {normal}, uniform {uniform}"
    );
}

/// (distinct 4 KiB blocks, blocks, share of the bytes LZ4 saves compressing each block).
fn content_of(path: &Path) -> (usize, usize, f64) {
    let data = std::fs::read(path).unwrap();
    let blocks: Vec<&[u8]> = data.chunks(4096).collect();
    let distinct: std::collections::HashSet<&[u8]> = blocks.iter().copied().collect();
    let packed: usize = blocks
        .iter()
        .map(|b| lz4_flex::block::compress(b).len())
        .sum();
    (
        distinct.len(),
        blocks.len(),
        1.0 - packed as f64 / data.len() as f64,
    )
}

#[test]
fn written_data_compresses_and_dedupes_as_asked() {
    let written = |tag: &str, opts: &str| {
        let job = format!("[j]\nrw=write\nbs=4k\nsize=1m\n{opts}");
        let (r, _, d) = run_job(tag, &job, &[]);
        assert_eq!(counted(&r, "j write"), (256, 1 << 20));
        let c = content_of(&Path::new(r["run_dir"].as_str().unwrap()).join("j.0.0"));
        drop(d);
        c
    };
    // Plain random data, scrambled per write as fio does by default: every block
    // distinct, next to nothing saved but the scramble's own bytes. The scramble writes
    // the sector's offset and the write's time (seconds, nanoseconds: 24 bytes, mostly
    // zeros in their high bytes, the time the same in all eight sectors of a block) into
    // each 512-byte sector, which LZ4 partly saves: 5.0-5.2% here, more the smaller the
    // clock's value (on a machine up for less than a day the seconds have 6 zero bytes).
    let (distinct, n, saved) = written("plain", "");
    assert_eq!((distinct, n), (256, 256));
    assert!(saved < 0.08, "{saved}");
    // Half of each 512-byte chunk compressible, 30% of the blocks repeats.
    let (distinct, n, saved) = written(
        "shaped",
        "buffer_compress_percentage=50\ndedupe_percentage=30\n",
    );
    assert_eq!(n, 256);
    let dup = 1.0 - distinct as f64 / n as f64;
    // 30 of each 100 blocks are copies of a few anchor blocks (their first copies count
    // as distinct).
    assert!((0.25..=0.31).contains(&dup), "{distinct} distinct of {n}");
    assert!((0.40..0.55).contains(&saved), "{saved}");
    // The same through io_uring, in 4 KiB chunks.
    let (distinct, _, saved) = written(
        "shapedaio",
        "ioengine=io_uring\niodepth=4\nbuffer_compress_percentage=80\nbuffer_compress_chunk=4k\ndedupe_percentage=10\n",
    );
    let dup = 1.0 - distinct as f64 / 256.0;
    assert!((0.06..=0.11).contains(&dup), "{distinct} distinct");
    assert!((0.70..0.85).contains(&saved), "{saved}");
}

#[test]
fn verify_reads_back_what_was_written_and_fails_the_run_on_a_bad_block() {
    // A writing job with verify: after its pass every block is read back and checked
    // (its reads are the job's reads, as in fio); through io_uring too, and with a backlog.
    for (tag, opts) in [
        ("vsync", "verify=crc32c\n"),
        ("vuring", "verify=md5\nioengine=io_uring\niodepth=8\n"),
        ("vbacklog", "verify=crc32c-intel\nverify_backlog=8\n"),
    ] {
        let job = format!("[w]\nrw=randwrite\nbs=4k\nsize=256k\n{opts}");
        let (r, _, _d) = run_job(tag, &job, &[]);
        assert_eq!(counted(&r, "w write"), (64, 256 << 10), "{tag}");
        assert_eq!(counted(&r, "w read"), (64, 256 << 10), "{tag}");
    }
    // do_verify=0 writes the headers only; a later job reading with verify checks them
    // (reading 16 KiB with a header every 8 KiB, as the writer wrote them).
    let writer = "[w]\nrw=write\nbs=8k\nfilename=data\nsize=256k\nverify=md5\ndo_verify=0\n";
    let reader = "[r]\nstonewall\nrw=read\nbs=16k\nfilename=data\nsize=256k\nverify=md5\nverify_interval=8k\n";
    // Two 4 KiB writes without headers, inside the blocks at 32 KiB and 40 KiB past
    // their headers: the read of 32..48 KiB finds both checksums wrong and, as in fio,
    // the error ends the job there.
    let spoiler =
        "[x]\nstonewall\nrw=write:4k\nbs=4k\nfilename=data\nsize=256k\noffset=36k\nnumber_ios=2\n";
    let d = Scratch::new("vbad");
    let run_text = |name: &str, text: &str| {
        let f = d.path().join(name);
        std::fs::write(&f, text).unwrap();
        let json = d.path().join(format!("{name}.json"));
        let o = run(&[
            "run",
            f.to_str().unwrap(),
            "--dir",
            d.s(),
            "-q",
            "--json",
            json.to_str().unwrap(),
        ]);
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        (o, r)
    };
    let mismatches = |r: &Value| {
        let j = r["fio_jobs"].as_array().unwrap();
        let j = j.iter().find(|j| j["report"] == "r").unwrap();
        j["verify"]["mismatches"].as_u64().unwrap()
    };
    let (o, r) = run_text("good.fio", &format!("{writer}{reader}"));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(counted(&r, "r read"), (16, 256 << 10));
    assert_eq!(mismatches(&r), 0);
    let (o, r) = run_text("bad.fio", &format!("{writer}{spoiler}{reader}"));
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    // fio's lines, as fio prints them for the same blocks.
    for off in [32768, 40960] {
        let line = format!("md5: verify failed at file data offset {off}, length 8192 (requested block: offset=32768, length=16384, flags=8)");
        assert!(err.contains(&line), "{err}");
    }
    assert!(err.contains("       Expected CRC: "), "{err}");
    assert!(
        err.contains(
            "job r: 1 failed operation(s), the first: md5: verify failed at file data offset 32768"
        ),
        "{err}"
    );
    assert_eq!(counted(&r, "r read"), (3, 48 << 10));
    assert_eq!(mismatches(&r), 2);
    // verify_fatal: the bad read's check stops at its first bad block.
    let (o, r) = run_text(
        "fatal.fio",
        &format!("{writer}{spoiler}{reader}verify_fatal=1\n"),
    );
    assert!(!o.status.success());
    assert!(
        text(&o).contains("job r: 1 failed operation(s)"),
        "{}",
        text(&o)
    );
    assert_eq!(mismatches(&r), 1);
}

#[test]
fn mmap_engine_copies_through_a_mapping_and_msyncs() {
    // Writes into the mapping reach the file (not laid out: made as long as the range
    // first), an msync after every 4th write but the last, counted as fsyncs.
    let (r, f, d) = run_job(
        "mmapw",
        "[m]\nioengine=mmap\nrw=randwrite\nbs=4k\nsize=256k\nfsync=4\nfallocate=none\n",
        &[],
    );
    assert_eq!(counted(&r, "m write"), (64, 256 << 10));
    assert_eq!(counted(&r, "m sync").0, 15);
    assert_eq!(f, files(&[("m.0.0", 256 << 10)]));
    let path = Path::new(r["run_dir"].as_str().unwrap()).join("m.0.0");
    assert_eq!(written_blocks(&path).len(), 64);
    drop(d);
    // Reads copy out of the mapping; direct=1 msyncs and drops each range; end_fsync is
    // an msync of the whole mapping.
    for (tag, job, stat, n) in [
        ("mmapr", "rw=randread\n", "m read", 64),
        ("mmapd", "rw=write\ndirect=1\nend_fsync=1\n", "m write", 64),
    ] {
        let (r, _, _d) = run_job(
            tag,
            &format!("[m]\nioengine=mmap\nbs=4k\nsize=256k\n{job}"),
            &[],
        );
        assert_eq!(counted(&r, stat), (n, n * 4096), "{job}");
    }
    // What the mapping took is on the file: a mixed job's verify phase reads it back with
    // pread and finds every block's header.
    let (r, _, _d) = run_job(
        "mmapv",
        "[m]\nioengine=mmap\nbs=4k\nsize=256k\nrw=randrw\nverify=crc32c\n",
        &[],
    );
    let (rd, wr) = (counted(&r, "m read").0, counted(&r, "m write").0);
    assert!(wr > 0 && rd > 64 - wr, "reads {rd}, writes {wr}");
    assert_eq!(
        rd, 64,
        "the job's reads and the verify phase's, one per block written"
    );
}

#[test]
fn strided_zones_move_the_io_as_fio_does() {
    // 64 KiB written in each zone, then 64 KiB skipped; past the end back to the start:
    // the blocks fio 3.33 writes for the same job (every other 16 blocks, 240 blocks long).
    let job = |z: &str, rw: &str| {
        format!("[z]\nrw={rw}\nbs=4k\nsize=1m\nfallocate=none\nzonemode=strided\n{z}")
    };
    let (r, f, d) = run_job("zseq", &job("zonesize=64k\nzoneskip=64k\n", "write"), &[]);
    assert_eq!(counted(&r, "z write"), (256, 1 << 20));
    assert_eq!(f, files(&[("z.0.0", 240 << 12)]));
    let want: Vec<u64> = (0..256u64).filter(|b| b % 32 < 16).take(128).collect();
    let path = Path::new(r["run_dir"].as_str().unwrap()).join("z.0.0");
    assert_eq!(written_blocks(&path), want);
    drop(d);
    // Random in a 128 KiB range, 64 KiB a zone, 256 KiB skipped: every write in the ranges
    // at 0, 384 KiB and 768 KiB.
    let (r, _, _d) = run_job(
        "zrand",
        &job("zonesize=64k\nzonerange=128k\nzoneskip=256k\n", "randwrite"),
        &[],
    );
    assert_eq!(counted(&r, "z write").0, 256);
    let path = Path::new(r["run_dir"].as_str().unwrap()).join("z.0.0");
    let got = written_blocks(&path);
    assert!(got.iter().all(|b| b % 96 < 32), "{got:?}");
    assert!(got.iter().any(|b| *b >= 192), "{got:?}");
}

#[test]
fn opendir_reads_files_in_place_and_a_writing_job_there_is_refused() {
    // A directory fsbench did not create: every regular file below it is a file of the
    // job, read where it is (whole, in blocks; links not followed), and left unchanged.
    let d = Scratch::new("opendir");
    let src = d.path().join("data");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    let a: Vec<u8> = (0..65536u32).map(|i| (i * 7 % 251) as u8).collect();
    let b: Vec<u8> = (0..131072u32).map(|i| (i * 13 % 251) as u8).collect();
    std::fs::write(src.join("a"), &a).unwrap();
    std::fs::write(src.join("sub/b"), &b).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", src.join("link")).unwrap();
    let job = format!("[r]\nrw=randread\nbs=4k\nopendir={}\n", src.display());
    let (r, f, _k) = run_job("opendir", &job, &[]);
    assert_eq!(counted(&r, "r read"), (48, 192 << 10));
    assert!(f.is_empty(), "nothing laid out in the run directory: {f:?}");
    assert_eq!(std::fs::read(src.join("a")).unwrap(), a);
    assert_eq!(std::fs::read(src.join("sub/b")).unwrap(), b);
    // A job that writes there is refused with the reason, and nothing is touched.
    let w = d.path().join("w.fio");
    std::fs::write(
        &w,
        format!("[w]\nrw=randrw\nbs=4k\nopendir={}\n", src.display()),
    )
    .unwrap();
    let o = run(&["run", w.to_str().unwrap(), "--dir", d.s()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("w.fio:4:1"), "{err}");
    assert!(
        err.contains("never into a directory it did not create"),
        "{err}"
    );
    assert_eq!(std::fs::read(src.join("a")).unwrap(), a);
}

#[test]
fn files_are_laid_out_where_and_as_fio_lays_them_out() {
    // offset: the file holds offset + size; offset_increment moves each clone on.
    let (r, f, _d) = run_job("off", "[j]\nrw=read\nbs=4k\nsize=64k\noffset=32k\n", &[]);
    assert_eq!(f, files(&[("j.0.0", 96 << 10)]));
    assert_eq!(counted(&r, "j read"), (16, 64 << 10));
    let job = "[j]\nrw=write\nbs=4k\nsize=16k\noffset_increment=64k\nnumjobs=2\nfilename=shared\n";
    let (r, f, _d) = run_job("offinc", job, &[]);
    assert_eq!(f, files(&[("shared", 80 << 10)]));
    assert_eq!(counted(&r, "j.0 write"), (4, 16 << 10));
    assert_eq!(counted(&r, "j.1 write"), (4, 16 << 10));
    // filename= with `:` names several files; numjobs clones get files of their own.
    let (_, f, _d) = run_job("names", "[j]\nrw=randread\nsize=64k\nfilename=a:b\n", &[]);
    assert_eq!(f, files(&[("a", 32 << 10), ("b", 32 << 10)]));
    let job = "[j]\nrw=read\nsize=16k\nnumjobs=3\ngroup_reporting\n";
    let (r, f, _d) = run_job("clones", job, &[]);
    assert_eq!(
        f,
        files(&[
            ("j.0.0", 16 << 10),
            ("j.1.0", 16 << 10),
            ("j.2.0", 16 << 10)
        ])
    );
    // group_reporting: the clones report as one.
    assert_eq!(counted(&r, "j read"), (12, 48 << 10));
    // fallocate=none and a write job: the file is created empty, then written.
    let (_, f, _d) = run_job("falloc", "[j]\nrw=write\nsize=16k\nfallocate=none\n", &[]);
    assert_eq!(f, files(&[("j.0.0", 16 << 10)]));
    // create_on_open: not laid out; the job creates it and writes it.
    let job = "[j]\nrw=write\nbs=4k\nsize=16k\ncreate_on_open=1\n";
    let (r, f, _d) = run_job("coo", job, &[]);
    assert_eq!(f, files(&[("j.0.0", 16 << 10)]));
    assert_eq!(counted(&r, "j write"), (4, 16 << 10));
    assert_eq!(r["layout"]["files_written"], 0);
}

#[test]
fn rates_pace_unlink_removes_and_iodepth_changes_nothing_with_sync_engines() {
    // 16 reads at 100 a second: the 16th waits until 150 ms after the start (fio's linear
    // pacing), whatever the device's speed.
    let (r, _, _d) = run_job(
        "rate",
        "[j]\nrw=randread\nbs=4k\nsize=64k\nrate_iops=100\n",
        &[],
    );
    assert_eq!(counted(&r, "j read"), (16, 64 << 10));
    // The job's runtime is recorded with its clone (not as a row of the table).
    let rt = &r["fio_jobs"][0];
    assert!(rt["runtime_ns"].as_u64().unwrap() >= 150_000_000, "{rt}");
    assert!(r["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["name"] != "j runtime"));
    assert!(
        r["duration_s"].as_f64().unwrap() >= 0.15,
        "{}",
        r["duration_s"]
    );
    let (r, _, _d) = run_job("rateb", "[j]\nrw=write\nbs=4k\nsize=32k\nrate=,80k\n", &[]);
    assert_eq!(counted(&r, "j write"), (8, 32 << 10));
    // 28 KiB issued before the last write: 350 ms at 80 KiB/s.
    assert!(
        r["duration_s"].as_f64().unwrap() >= 0.35,
        "{}",
        r["duration_s"]
    );
    let (r, f, _d) = run_job("unlink", "[j]\nrw=write\nbs=4k\nsize=32k\nunlink=1\n", &[]);
    assert_eq!(counted(&r, "j write"), (8, 32 << 10));
    assert!(f.is_empty(), "{f:?}");
    let job = "[j]\nrw=randread\nbs=4k\nsize=32k\nioengine=psync\niodepth=32\n";
    let (r, _, _d) = run_job("depth", job, &[]);
    assert_eq!(counted(&r, "j read"), (8, 32 << 10));
}

#[test]
fn rates_of_both_directions_and_poisson_gaps_pace_as_fio() {
    // A 50/50 mix with reads at 1000 a second and writes at 10: as fio's rate_ddir, a
    // write not yet due gives way to a read that is, so the rates, not the mix, share
    // the 64 I/Os (a write every 100 ms while the reads take about 64 ms).
    let (r, _, _d) = run_job(
        "raterw",
        "[j]\nrw=randrw\nbs=4k\nsize=256k\nrate_iops=1000,10\n",
        &[],
    );
    let (rd, wr) = (counted(&r, "j read").0, counted(&r, "j write").0);
    assert_eq!(rd + wr, 64);
    assert!(wr >= 1 && wr * 4 < rd, "reads {rd}, writes {wr}");
    // The last write waits for its time: (writes - 1) × 100 ms after the start.
    let dur = r["duration_s"].as_f64().unwrap();
    assert!(dur >= (wr - 1) as f64 * 0.1, "{dur} s for {wr} writes");
    // Poisson gaps of mean 1/200 s over one second: about 200 reads, never far more.
    let (r, _, _d) = run_job(
        "poisson",
        "[j]\nrw=randread\nbs=4k\nsize=1m\nrate_iops=200\nrate_process=poisson\ntime_based\nruntime=1\n",
        &[],
    );
    let reads = counted(&r, "j read").0;
    assert!((1..=260).contains(&reads), "{reads}");
}

#[test]
fn ranges_spin_and_minimum_rates_as_fio() {
    // filesize=lo-hi: each file a size drawn in the range, a multiple of the block size;
    // the job reads them whole.
    let (r, f, _d) = run_job(
        "fsrange",
        "[j]\nrw=read\nbs=4k\nnrfiles=4\nfilesize=16k-64k\n",
        &[],
    );
    assert_eq!(f.len(), 4);
    assert!(
        f.iter()
            .all(|(_, s)| (16 << 10..=64 << 10).contains(s) && s % 4096 == 0),
        "{f:?}"
    );
    assert!(
        f.iter().any(|x| x.1 != f[0].1),
        "drawn, not all alike: {f:?}"
    );
    let total: u64 = f.iter().map(|x| x.1).sum();
    assert_eq!(counted(&r, "j read"), (total / 4096, total));
    // startdelay=lo-hi: each clone its own delay in the range, said by `check`.
    let d = Scratch::new("delay");
    let job = d.path().join("delay.fio");
    std::fs::write(&job, "[j]\nrw=read\nsize=64k\nnumjobs=4\nstartdelay=1-3\n").unwrap();
    let o = run(&["check", job.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let delays: Vec<f64> = text(&o)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("starts "))
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(delays.len(), 4, "{}", text(&o));
    assert!(delays.iter().all(|d| (1.0..=3.0).contains(d)), "{delays:?}");
    assert!(delays.iter().any(|x| *x != delays[0]), "{delays:?}");
    // thinktime_spin: 8 thinks of 100 ms, all spent busy: the thread's CPU time shows it
    // (at least a quarter of it, whatever else the machine runs), and the run lasts them.
    let (r, _, _d) = run_job(
        "spin",
        "[j]\nrw=read\nbs=4k\nsize=32k\nthinktime=100ms\nthinktime_spin=100ms\n",
        &[],
    );
    assert_eq!(counted(&r, "j read").0, 8);
    let cpu = r["summary"]["cpu_user_s"].as_f64().unwrap();
    assert!(cpu >= 0.2, "{cpu} s of CPU for 0.8 s of spinning");
    assert!(r["duration_s"].as_f64().unwrap() >= 0.8);
    // rate_iops_min above what rate_iops lets through: after fio's two seconds of
    // settling, the first check a second later fails the job, and the run with it.
    let d = Scratch::new("ratemin");
    let job = d.path().join("ratemin.fio");
    std::fs::write(
        &job,
        "[j]\nrw=randread\nbs=4k\nsize=1m\nrate_iops=20\nrate_iops_min=100\ntime_based\nruntime=10\n",
    )
    .unwrap();
    let o = run(&["run", job.to_str().unwrap(), "--dir", d.s(), "-q"]);
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let got: u64 = err
        .split("rate_iops_min=100 IOPS not met, got ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!((1..100).contains(&got), "{err}");
    assert!(err.contains("job j: 1 failed operation"), "{err}");
}

#[test]
fn async_engines_keep_iodepth_in_flight_through_io_uring() {
    let d = Scratch::new("uring");
    let f = d.path().join("u.fio");
    let json = d.path().join("r.json");
    std::fs::write(
        &f,
        "[u]\nrw=randread\nbs=4k\nsize=256k\nioengine=libaio\niodepth=8\n[w]\nrw=write\nbs=8k\nsize=128k\nioengine=io_uring\niodepth=4\nend_fsync=1\n",
    )
    .unwrap();
    let o = run(&[
        "run",
        f.to_str().unwrap(),
        "--dir",
        d.s(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let t = text(&o);
    if !o.status.success() && t.contains("io_uring is not available") {
        skip(
            "async_engines_keep_iodepth_in_flight_through_io_uring: io_uring is not available here",
        );
        return;
    }
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("note: job u (ioengine=libaio) ran through io_uring"),
        "{t}"
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(counted(&r, "u read"), (64, 256 << 10));
    assert_eq!(counted(&r, "w write"), (16, 128 << 10));
    assert_eq!(counted(&r, "w end-sync").0, 1);
    let o = run(&["check", f.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("ioengine libaio (io_uring: fsbench runs it through io_uring), iodepth 8"),
        "{out}"
    );
}

#[test]
fn async_engines_queue_fsyncs_and_batch_as_fio() {
    // fsync (fdatasync) every 8 writes through io_uring: queued like the writes, one after
    // every 8th write but the last, as fio's current source (fio 3.33 queued more while
    // one was in flight).
    let d = Scratch::new("uringsync");
    let f = d.path().join("s.fio");
    let json = d.path().join("r.json");
    std::fs::write(
        &f,
        "[s]\nrw=randwrite\nbs=4k\nsize=256k\nioengine=io_uring\niodepth=8\nfsync=8\n[t]\nrw=write\nbs=4k\nsize=64k\nioengine=libaio\niodepth=4\nfdatasync=4\n",
    )
    .unwrap();
    let args = |f: &Path, json: &Path| {
        vec![
            "run".to_string(),
            f.to_str().unwrap().to_string(),
            "--dir".into(),
            d.s().to_string(),
            "-q".into(),
            "--json".into(),
            json.to_str().unwrap().to_string(),
        ]
    };
    let a = args(&f, &json);
    let o = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let t = text(&o);
    if !o.status.success() && t.contains("io_uring is not available") {
        skip("async_engines_queue_fsyncs_and_batch_as_fio: io_uring is not available here");
        return;
    }
    assert!(o.status.success(), "{t}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(counted(&r, "s write"), (64, 256 << 10));
    assert_eq!(counted(&r, "s sync"), (7, 0));
    assert_eq!(counted(&r, "t write"), (16, 64 << 10));
    assert_eq!(counted(&r, "t datasync").0, 3);
    // iodepth_batch_submit=8 and iodepth_batch_complete_min=8: the queue goes to the
    // kernel 8 at a time and is reaped 8 at a time, so far fewer io_uring_enter calls
    // than the default (one submission per I/O). Counted with strace where it runs.
    let enters = |extra: &str, tag: &str| -> Option<usize> {
        let f = d.path().join(format!("{tag}.fio"));
        std::fs::write(
            &f,
            format!("[u]\nrw=randread\nbs=4k\nsize=256k\nioengine=io_uring\niodepth=8\n{extra}"),
        )
        .unwrap();
        let trace = d.path().join(format!("{tag}.strace"));
        let json = d.path().join(format!("{tag}.json"));
        let mut cmd = std::process::Command::new("strace");
        cmd.args(["-f", "-e", "trace=io_uring_enter", "-o"])
            .arg(&trace)
            .arg(bin().get_program())
            .args(args(&f, &json));
        let o = cmd.output().ok()?;
        if !o.status.success() {
            return None;
        }
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(counted(&r, "u read"), (64, 256 << 10), "{extra}");
        let calls = std::fs::read_to_string(&trace).unwrap();
        Some(
            calls
                .lines()
                .filter(|l| l.contains("io_uring_enter("))
                .count(),
        )
    };
    let Some(batched) = enters(
        "iodepth_batch_submit=8\niodepth_batch_complete_min=8\n",
        "batched",
    ) else {
        skip("async_engines_queue_fsyncs_and_batch_as_fio (batches): strace does not run here");
        return;
    };
    let one_by_one = enters("", "single").unwrap();
    assert!(
        (8..=16).contains(&batched) && one_by_one >= 64,
        "io_uring_enter: {batched} batched, {one_by_one} one by one"
    );
}

#[test]
fn stonewall_and_wait_for_start_jobs_after_others_end() {
    // Ten paced reads take at least 90 ms; run one after the other, the three jobs take at
    // least 270 ms, where together they would take 90.
    let job = "[global]\nrw=randread\nbs=4k\nsize=40k\nrate_iops=100\n[a]\n[b]\nstonewall\n[c]\nwait_for=b\n";
    let (r, f, _d) = run_job("stonewall", job, &[]);
    for j in ["a", "b", "c"] {
        assert_eq!(counted(&r, &format!("{j} read")), (10, 40 << 10));
    }
    assert_eq!(f.len(), 3);
    assert!(
        r["duration_s"].as_f64().unwrap() >= 0.27,
        "{}",
        r["duration_s"]
    );
    let d = Scratch::new("stonewall-check");
    let p = d.path().join("s.fio");
    std::fs::write(&p, job).unwrap();
    let o = run(&["check", p.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("starts when a has ended"), "{out}");
    assert!(out.contains("starts when a, b have ended"), "{out}");
    // startdelay: the job starts late, and its runtime starts then.
    let job = "[d]\nrw=read\nbs=4k\nsize=16k\nstartdelay=200ms\n";
    let (r, _, _d) = run_job("startdelay", job, &[]);
    assert_eq!(counted(&r, "d read"), (4, 16 << 10));
    assert!(
        r["duration_s"].as_f64().unwrap() >= 0.2,
        "{}",
        r["duration_s"]
    );
}

#[test]
fn direct_io_runs_where_the_file_system_takes_it() {
    let d = Scratch::new("direct");
    let f = d.path().join("d.fio");
    std::fs::write(&f, "[d]\nrw=randread\nbs=4k\nsize=64k\ndirect=1\n").unwrap();
    let o = run(&["run", f.to_str().unwrap(), "--dir", d.s(), "-q"]);
    let t = text(&o);
    if !o.status.success() && t.contains("Invalid argument") {
        skip("direct_io_runs_where_the_file_system_takes_it: the temporary directory's file system refuses O_DIRECT");
        return;
    }
    assert!(o.status.success(), "{t}");
    assert!(t.contains("d read"), "{t}");
}

/// A job file's error: the run fails and the message names `place` and `what`.
fn refused(job: &str, place: &str, what: &str) {
    let d = Scratch::new("refused");
    let f = d.path().join("bad.fio");
    std::fs::write(&f, job).unwrap();
    for args in [vec!["check"], vec!["run", "--dir", d.s()]] {
        let mut args = args.clone();
        args.push(f.to_str().unwrap());
        let o = run(&args);
        assert!(!o.status.success(), "{job}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("bad.fio:{place}")),
            "{job}: want {place}\n{err}"
        );
        assert!(err.contains(what), "{job}: want {what}\n{err}");
    }
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "nothing but the job file: {left:?}");
}

#[test]
fn refused_options_and_malformed_lines_name_file_line_and_column() {
    refused(
        "[j]\nsize=1m\n  verify=sha384\n",
        "3:10",
        "not a verify type fio has",
    );
    refused(
        "[j]\nsize=1m\nverify=pattern\n",
        "3:1",
        "without `verify_pattern`",
    );
    refused(
        "[j]\nsize=1m\nbs=64\nverify=sha256\n",
        "4:1",
        "Blocksize too small",
    );
    refused(
        "[j]\nsize=1m\nverify=md5\nverify_offset=4090\n",
        "3:1",
        "past the end of each 4096-byte verify interval",
    );
    refused(
        "[j]\nsize=1m\nverify=md5\nverify_pattern=%o\n",
        "4:16",
        "formats (%o) are not run",
    );
    refused("[j]\nsize=1m\nbogus_option=1\n", "3:1", "`bogus_option`");
    refused("[j]\nsize=1m\nrw=trim\n", "3:4", "trims are not supported");
    refused("[j]\nsize=1m\nrw=sideways\n", "3:4", "not an I/O pattern");
    refused(
        "[j]\nsize=1m\nioengine=splice\n",
        "3:10",
        "not an I/O engine fsbench runs",
    );
    refused(
        "[j]\nsize=1m\nrw=write\nbs=512\nioengine=mmap\nfsync=4\n",
        "5:1",
        "mmap options dictate a minimum block size",
    );
    refused(
        "[j]\nsize=1m\nrate=1k\nrate_process=poisson\n",
        "3:1",
        "less than one block",
    );
    refused(
        "[j]\nsize=1m\nrate_iops=0\n",
        "3:1",
        "rate lower than supported",
    );
    refused(
        "[j]\nsize=1m\nrate_process=bursty\n",
        "3:14",
        "linear or poisson",
    );
    refused("[j]\nsize=1m\nbs=4q\n", "3:4", "unknown size suffix");
    refused(
        "[j]\nsize=1m\nnrfiles=2\nzonesize=64k\n",
        "4:1",
        "fsbench refuses rather than ignore",
    );
    refused("[j]\nsize=1m\nzonemode=zbd\n", "3:10", "none and strided");
    refused("[j]\nsize=1m\ndirect=yes\n", "3:8", "not a boolean");
    refused("[j]\nsize=1m\nruntime=10sec\n", "3:9", "unknown time unit");
    refused(
        "[j]\nsize=1m\nrandom_distribution=normal:100\n",
        "3:21",
        "normal deviation 100: out of range",
    );
    refused(
        "[j]\nsize=1m\nrandom_distribution=zoned:50/10:40/90\n",
        "3:21",
        "add up to 90, not 100",
    );
    refused(
        "[j]\nrw=randread\nsize=1m\nrandom_distribution=zoned_abs:50/1m:50/1m\n",
        "4:1",
        "zoned_abs sizes exceed file size",
    );
    refused(
        "[j]\nsize=1m\nrandom_distribution=zipf:1\n",
        "3:21",
        "not 1",
    );
    refused(
        "[j]\nsize=1m\nrandom_distribution=pareto:1.5\n",
        "3:21",
        "out of range",
    );
    refused("size=1m\n[j]\n", "1:1", "outside of a [] job section");
    refused("[j\nsize=1m\n", "1:1", "closing `]`");
    refused(
        "[j]\nsize=1m\ninclude nowhere.fio\n",
        "3:9",
        "cannot read include file",
    );
    refused(
        "[j]\nsize=1m\nfilename=/etc/passwd\n",
        "3:10",
        "only inside the run directory",
    );
    refused(
        "[a]\nsize=1m\n[b]\nsize=1m\nwait_for=x\n",
        "5:1",
        "no job of that name before",
    );
    refused(
        "[a]\nsize=1m\n[b]\nsize=1m\nstonewall\ntime_based\nruntime=1\nramp_time=1\n",
        "8:1",
        "waits for others",
    );
    refused("[j]\nrw=read\n", "1:1", "no `size=`");
    refused("[j]\nbs=8k\nsize=4k\n", "3:1", "size too small");
    refused("[j]\nsize=1m\ntime_based\n", "3:1", "needs `runtime=`");
    refused("[global]\nsize=1m\n", "1:1", "no job section");
}

#[test]
fn check_and_show_explain_a_job_and_set_variables_are_refused() {
    let d = Scratch::new("explain");
    let f = d.path().join("x.job");
    std::fs::write(&f, "[w]\nrw=write\nbs=64k\nsize=1m\nfsync=8\nruntime=30\n").unwrap();
    let o = run(&["check", f.to_str().unwrap(), "--format", "fio"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", text(&o));
    assert!(out.contains("sequential writes"), "{out}");
    assert!(out.contains("fsync after every 8 writes"), "{out}");
    assert!(out.contains("file w.0.0: 1.0 MiB"), "{out}");
    assert!(out.contains("or 30 s, whichever ends first"), "{out}");
    let o = run(&["show", &format!("fio:{}", f.display())]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("[w]\nrw=write"), "{out}");
    assert!(
        out.contains("# job w (section [w]): sequential writes"),
        "{out}"
    );
    // Without --format fio, `.job` is not a fio file.
    let o = run(&["check", f.to_str().unwrap()]);
    assert!(!o.status.success());
    let o = run(&["check", "--fio", "rw=read size=1m", "-s", "nfiles=2"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("takes no -s variables"));
}

#[test]
fn experiments_run_fio_job_files_as_workloads() {
    let d = Scratch::new("fioexp");
    let target = d.path().join("t");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(
        d.path().join("j.fio"),
        "[j]\nrw=randread\nbs=4k\nsize=64k\n",
    )
    .unwrap();
    let plan = d.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[experiment]\nname = \"fioexp\"\nrepetitions = 1\n\n[[target]]\nname = \"here\"\nkind = \"dir\"\npath = \"{}\"\n\n[[measurement]]\nname = \"fio\"\nkind = \"workload\"\nparams = {{ workload = \"{}\" }}\n",
            target.display(),
            d.path().join("j.fio").display()
        ),
    )
    .unwrap();
    let out = d.path().join("out");
    let t = text(&experiment_ok(&plan, &out));
    assert!(out.join("results.db").is_file(), "{t}");
    assert!(t.contains("read_ops_per_s"), "{t}");
    // Nothing left in the target but what was there.
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
}
