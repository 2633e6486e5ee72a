//! `fsbench build`: a compile-like workload on a generated source tree, modelling the
//! kernel builds the reference studies time, without needing a compiler.
//!
//! Layout (written before timing starts): `src/d<k>/f<i>.c` spread over `--dirs`
//! directories, `include/h<j>.h` shared headers. Then `-j` jobs take sources in order; each
//! job reads its source and `--headers-per-job` headers (a fixed choice per source), burns
//! `--cpu-ms` of CPU, writes `--temps` temporary files and its object `obj/d<k>/f<i>.o`
//! (about the source's size), and deletes the temporaries. Last, a link reads every object
//! and writes `out/program`, the objects' concatenation.

use super::cli::BuildArgs;
use super::{timed, AppRun, OpTable, PathBuf0, Recorder};
use crate::engine::io;
use crate::engine::rundir::RunDir;
use crate::model::FlowopKind;
use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

pub const OPS: OpTable = &[
    ("read-source", FlowopKind::ReadWholeFile),
    ("read-header", FlowopKind::ReadWholeFile),
    ("compute", FlowopKind::Hog),
    ("write-temp", FlowopKind::WriteWholeFile),
    ("write-object", FlowopKind::WriteWholeFile),
    ("delete-temp", FlowopKind::DeleteFile),
    ("link-read", FlowopKind::ReadWholeFile),
    ("link-write", FlowopKind::WriteWholeFile),
];
const READ_SRC: usize = 0;
const READ_HDR: usize = 1;
const COMPUTE: usize = 2;
const WRITE_TMP: usize = 3;
const WRITE_OBJ: usize = 4;
const DELETE_TMP: usize = 5;
const LINK_READ: usize = 6;
const LINK_WRITE: usize = 7;

/// Spin until this thread has used `ms` more milliseconds of CPU.
fn burn_cpu(ms: u64) {
    let (u0, s0) = crate::stats::thread_cpu();
    let target = ms as f64 / 1000.0;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    loop {
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        std::hint::black_box(x);
        let (u, s) = crate::stats::thread_cpu();
        if (u - u0) + (s - s0) >= target {
            break;
        }
    }
}

/// Source i's directory.
fn dir_of(i: u32, dirs: u32) -> u32 {
    i % dirs
}

pub fn main(a: &BuildArgs) -> Result<()> {
    crate::engine::install_signal_handlers();
    if a.files == 0 || a.dirs == 0 || a.jobs == 0 {
        bail!("--files, --dirs and -j must be at least 1");
    }
    let parent = a.dir.clone().unwrap_or_else(std::env::temp_dir);
    let parent = parent
        .canonicalize()
        .with_context(|| format!("target directory {}", parent.display()))?;
    let rd = RunDir::create(&parent, "build", false)?;
    let root = &rd.path;

    // The tree, written before anything is measured.
    let t_setup = Instant::now();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(a.seed);
    for sub in ["include", "src", "obj", "tmp", "out"] {
        std::fs::create_dir(root.join(sub))?;
    }
    for d in 0..a.dirs {
        std::fs::create_dir(root.join(format!("src/d{d}")))?;
        std::fs::create_dir(root.join(format!("obj/d{d}")))?;
    }
    for h in 0..a.headers.max(1) {
        let text = super::c_source(&format!("h{h}"), &[], 2048, &mut rng);
        std::fs::write(root.join(format!("include/h{h}.h")), text)?;
    }
    let lo = (a.source_size / 2).max(64) as usize;
    let hi = (a.source_size * 3 / 2).max(lo as u64 + 1) as usize;
    let mut sizes = Vec::with_capacity(a.files as usize);
    let headers = a.headers.max(1);
    let mut includes: Vec<Vec<u32>> = Vec::with_capacity(a.files as usize);
    for i in 0..a.files {
        let size = rng.random_range(lo..hi);
        let inc: Vec<u32> = (0..a.headers_per_job.min(headers))
            .map(|_| rng.random_range(0..headers))
            .collect();
        let names: Vec<String> = inc.iter().map(|h| format!("h{h}.h")).collect();
        let text = super::c_source(&format!("f{i}"), &names, size, &mut rng);
        sizes.push(text.len());
        std::fs::write(
            root.join(format!("src/d{}/f{i}.c", dir_of(i, a.dirs))),
            text,
        )?;
        includes.push(inc);
    }
    let setup_s = t_setup.elapsed().as_secs_f64();

    // Compile jobs.
    let next = AtomicUsize::new(0);
    let started_at = super::now_epoch();
    let cpu0 = super::process_cpu(false);
    let t0 = Instant::now();
    let recs: Vec<Recorder> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..a.jobs)
            .map(|j| {
                let (next, sizes, includes) = (&next, &sizes, &includes);
                sc.spawn(move || {
                    let mut rec = super::recorder(OPS);
                    let mut p = PathBuf0::new(root);
                    let mut buf = Vec::new();
                    let mut hbuf = Vec::new();
                    let mut obj = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= sizes.len() || crate::engine::interrupted() {
                            break;
                        }
                        let d = dir_of(i as u32, a.dirs);
                        let path = p.with(format_args!("src/d{d}/f{i}.c"));
                        let n = timed(
                            &mut rec.ops[READ_SRC],
                            sizes[i] as u64,
                            || format!("reading {path:?}"),
                            || super::read_file(path, &mut buf, 64 * 1024),
                        )
                        .unwrap_or(0) as usize;
                        for h in &includes[i] {
                            let path = p.with(format_args!("include/h{h}.h"));
                            timed(
                                &mut rec.ops[READ_HDR],
                                0,
                                || format!("reading {path:?}"),
                                || super::read_file(path, &mut hbuf, 64 * 1024),
                            );
                        }
                        let t = Instant::now();
                        burn_cpu(a.cpu_ms);
                        rec.ops[COMPUTE].record(t.elapsed().as_nanos() as u64, 0);
                        // The "object": the source's bytes, transformed.
                        obj.clear();
                        obj.extend(buf[..n].iter().map(|b| b.rotate_left(3)));
                        for t in 0..a.temps {
                            let path = p.with(format_args!("tmp/j{j}-f{i}-{t}.s"));
                            timed(
                                &mut rec.ops[WRITE_TMP],
                                obj.len() as u64,
                                || format!("writing {path:?}"),
                                || super::write_file(path, &obj),
                            );
                        }
                        let path = p.with(format_args!("obj/d{d}/f{i}.o"));
                        timed(
                            &mut rec.ops[WRITE_OBJ],
                            obj.len() as u64,
                            || format!("writing {path:?}"),
                            || super::write_file(path, &obj),
                        );
                        for t in 0..a.temps {
                            let path = p.with(format_args!("tmp/j{j}-f{i}-{t}.s"));
                            timed(
                                &mut rec.ops[DELETE_TMP],
                                0,
                                || format!("deleting {path:?}"),
                                || io::unlink(path),
                            );
                        }
                    }
                    let (u, s) = crate::stats::thread_cpu();
                    rec.cpu_user_s = u;
                    rec.cpu_sys_s = s;
                    rec
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("build job panicked"))
            .collect()
    });
    let compile_s = t0.elapsed().as_secs_f64();

    // Link: read every object, write one output.
    let t1 = Instant::now();
    let mut merged = super::recorder(OPS);
    for r in &recs {
        merged.merge(r);
    }
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let mut p = PathBuf0::new(root);
    for i in 0..a.files {
        if crate::engine::interrupted() {
            break;
        }
        let path = p.with(format_args!("obj/d{}/f{i}.o", dir_of(i, a.dirs)));
        if let Some(n) = timed(
            &mut merged.ops[LINK_READ],
            sizes[i as usize] as u64,
            || format!("reading {path:?}"),
            || super::read_file(path, &mut buf, 64 * 1024),
        ) {
            out.extend_from_slice(&buf[..n as usize]);
        }
    }
    let path = p.with("out/program");
    timed(
        &mut merged.ops[LINK_WRITE],
        out.len() as u64,
        || format!("writing {path:?}"),
        || super::write_file(path, &out),
    );
    let link_s = t1.elapsed().as_secs_f64();
    let secs = t0.elapsed().as_secs_f64();
    let cpu1 = super::process_cpu(false);
    // Process CPU over the measured part (jobs and link), user and system.
    merged.cpu_user_s = cpu1.0 - cpu0.0;
    merged.cpu_sys_s = cpu1.1 - cpu0.1;

    let mut variables = BTreeMap::new();
    for (k, v) in [
        ("files", a.files.to_string()),
        ("dirs", a.dirs.to_string()),
        ("jobs", a.jobs.to_string()),
        ("headers", headers.to_string()),
        ("headers_per_job", a.headers_per_job.to_string()),
        ("source_size", a.source_size.to_string()),
        ("cpu_ms", a.cpu_ms.to_string()),
        ("temps", a.temps.to_string()),
        ("compile_s", format!("{compile_s:.6}")),
        ("link_s", format!("{link_s:.6}")),
    ] {
        variables.insert(k.to_string(), v);
    }
    crate::outln!(
        "build: {} sources in {} directories, -j{}: compile {:.3} s, link {:.3} s, elapsed {:.3} s; CPU {:.2} s user, {:.2} s system (tree written in {:.3} s, not measured)\n",
        a.files, a.dirs, a.jobs, compile_s, link_s, secs, merged.cpu_user_s, merged.cpu_sys_s, setup_s
    );
    let r = super::results(
        AppRun {
            name: "build",
            variables,
            seed: a.seed,
            run_dir: root,
            started_at,
            duration_s: secs,
            threads: a.jobs as u64,
            notes: vec![format!(
                "elapsed {secs:.3} s = compile {compile_s:.3} s + link {link_s:.3} s"
            )],
        },
        OPS,
        &merged,
    );
    let res = super::emit(&r, a.json.as_deref());
    if !a.keep {
        rd.remove()?;
    }
    res
}
