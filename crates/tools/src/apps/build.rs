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
use anyhow::{bail, Context, Result};
use fsbench_base::sys::io;
use fsbench_engine::engine::rundir::RunDir;
use fsbench_model::model::FlowopKind;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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
    let (u0, s0) = fsbench_results::stats::thread_cpu();
    let target = ms as f64 / 1000.0;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    loop {
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        std::hint::black_box(x);
        let (u, s) = fsbench_results::stats::thread_cpu();
        if (u - u0) + (s - s0) >= target {
            break;
        }
    }
}

/// Source i's directory.
fn dir_of(i: u32, dirs: u32) -> u32 {
    i % dirs
}

/// The tree a build works on: source files and headers (absolute paths), and for each
/// source the headers it reads.
struct Tree {
    sources: Vec<(std::ffi::CString, u64)>,
    headers: Vec<std::ffi::CString>,
    includes: Vec<Vec<u32>>,
    /// Seconds spent writing or listing it (not measured).
    setup_s: f64,
}

/// What a generated tree holds (from `fsbench build`'s options).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TreeSpec {
    pub files: u32,
    pub dirs: u32,
    pub headers: u32,
    pub headers_per_job: u32,
    pub source_size: u64,
    /// Log-normal source sizes (`--heavy-tail`) instead of uniform ones.
    pub heavy_tail: bool,
    pub seed: u64,
}

impl TreeSpec {
    fn of(a: &BuildArgs) -> TreeSpec {
        TreeSpec {
            files: a.files,
            dirs: a.dirs,
            headers: a.headers,
            headers_per_job: a.headers_per_job,
            source_size: a.source_size,
            heavy_tail: a.heavy_tail,
            seed: a.seed,
        }
    }

    /// `fsbench build`'s defaults, overridden by `(option, value)` pairs named as the
    /// options are (files, dirs, headers, headers_per_job, source_size, heavy_tail as 0
    /// or 1, seed).
    pub fn with(params: &[(String, u64)]) -> TreeSpec {
        let mut t = TreeSpec {
            files: 200,
            dirs: 10,
            headers: 20,
            headers_per_job: 5,
            source_size: 8192,
            heavy_tail: false,
            seed: 1,
        };
        for (k, v) in params {
            let v32 = (*v).min(u32::MAX as u64) as u32;
            match k.as_str() {
                "files" => t.files = v32,
                "dirs" => t.dirs = v32.max(1),
                "headers" => t.headers = v32,
                "headers_per_job" => t.headers_per_job = v32,
                "source_size" => t.source_size = *v,
                "heavy_tail" => t.heavy_tail = *v != 0,
                "seed" => t.seed = *v,
                _ => {}
            }
        }
        t
    }
}

/// Write a generated source tree (`include/`, `src/d<k>/`) into the existing, empty
/// directory `root`, as `fsbench build` lays it out before timing.
pub fn generate_tree(spec: &TreeSpec, root: &Path) -> Result<()> {
    generate_spec(spec, root).map(|_| ())
}

/// Write the generated tree into `root`.
fn generate(a: &BuildArgs, root: &Path) -> Result<Tree> {
    generate_spec(&TreeSpec::of(a), root)
}

fn generate_spec(a: &TreeSpec, root: &Path) -> Result<Tree> {
    let t_setup = Instant::now();
    std::fs::create_dir(root.join("include"))?;
    std::fs::create_dir(root.join("src"))?;
    for d in 0..a.dirs {
        std::fs::create_dir(root.join(format!("src/d{d}")))?;
    }
    let mut hpaths = Vec::new();
    let mut sources = Vec::with_capacity(a.files as usize);
    let mut includes: Vec<Vec<u32>> = Vec::with_capacity(a.files as usize);
    draw_tree(a, |f| {
        match f {
            Drawn::Header(h, text) => {
                let p = root.join(format!("include/h{h}.h"));
                std::fs::write(&p, text)?;
                hpaths.push(super::cpath(&p));
            }
            Drawn::Source(i, inc, text) => {
                if fsbench_base::cancel::interrupted() {
                    bail!("interrupted while writing the source tree");
                }
                let p = root.join(format!("src/d{}/f{i}.c", dir_of(i, a.dirs)));
                std::fs::write(&p, text)?;
                sources.push((super::cpath(&p), text.len() as u64));
                includes.push(inc);
            }
        }
        Ok(())
    })?;
    Ok(Tree {
        sources,
        headers: hpaths,
        includes,
        setup_s: t_setup.elapsed().as_secs_f64(),
    })
}

/// One file of a generated tree, as drawn: a header's number and text, or a source's
/// number, the headers it includes and its text.
enum Drawn<'t> {
    Header(u32, &'t str),
    Source(u32, Vec<u32>, &'t str),
}

/// Draw a generated tree's files in the order they are written (headers, then sources),
/// each handed to `file`: the one place their sizes, includes and texts come from the seed.
fn draw_tree(a: &TreeSpec, mut file: impl FnMut(Drawn<'_>) -> Result<()>) -> Result<()> {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(a.seed);
    let headers = a.headers.max(1);
    for h in 0..headers {
        let text = super::c_source(&format!("h{h}"), &[], 2048, &mut rng);
        file(Drawn::Header(h, &text))?;
    }
    let size_of = source_sizes(a);
    for i in 0..a.files {
        let size = size_of(&mut rng);
        let inc: Vec<u32> = (0..a.headers_per_job.min(headers))
            .map(|_| rng.random_range(0..headers))
            .collect();
        let names: Vec<String> = inc.iter().map(|h| format!("h{h}.h")).collect();
        let text = super::c_source(&format!("f{i}"), &names, size, &mut rng);
        file(Drawn::Source(i, inc, &text))?;
    }
    Ok(())
}

impl TreeSpec {
    /// The bytes the generated tree holds, sources and headers, exactly as written (drawn
    /// without writing): with `heavy_tail` a sample's total can lie well off `files` ×
    /// `source_size` (32 chunks of 256 KiB mean came to 10.9 MiB, not 8).
    pub fn bytes(&self) -> u64 {
        let mut total = 0u64;
        let _ = draw_tree(self, |f| {
            total += match f {
                Drawn::Header(_, t) | Drawn::Source(_, _, t) => t.len() as u64,
            };
            Ok(())
        });
        total
    }
}

/// How a generated source's size is drawn: uniform from half to one and a half times
/// `source_size`, or (heavy tail) log-normal with σ = 1 and mean `source_size` (μ = ln m −
/// σ²/2), clipped to 64 bytes .. 16 × `source_size`: a few large files hold much of the
/// bytes, as in a kernel tree.
fn source_sizes(a: &TreeSpec) -> impl Fn(&mut rand_pcg::Pcg64Mcg) -> usize {
    let lo = (a.source_size / 2).max(64) as usize;
    let hi = (a.source_size * 3 / 2).max(lo as u64 + 1) as usize;
    let mean = a.source_size.max(64) as f64;
    let max = (16.0 * mean) as usize;
    let heavy = a.heavy_tail;
    let lognormal = rand_distr::LogNormal::new(mean.ln() - 0.5, 1.0).expect("σ = 1 is valid");
    move |rng| {
        if heavy {
            (rand_distr::Distribution::sample(&lognormal, rng) as usize).clamp(64, max)
        } else {
            rng.random_range(lo..hi)
        }
    }
}

const SOURCE_EXT: &[&str] = &["c", "cc", "cpp", "cxx", "S", "s", "rs"];
const HEADER_EXT: &[&str] = &["h", "hh", "hpp", "hxx"];

/// List an existing tree's sources and headers (sorted by path; symbolic links are not
/// followed). Each source reads `--headers-per-job` headers chosen with the seed.
fn existing(a: &BuildArgs, dir: &Path) -> Result<Tree> {
    let t_setup = Instant::now();
    let mut sources = Vec::new();
    let mut headers = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d).with_context(|| format!("listing {}", d.display()))?;
        for e in rd {
            let e = e.with_context(|| format!("listing {}", d.display()))?;
            let ft = e.file_type()?;
            let p = e.path();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() {
                let ext = p.extension().and_then(|x| x.to_str()).unwrap_or("");
                if SOURCE_EXT.contains(&ext) {
                    let len = e.metadata()?.len();
                    sources.push((p, len));
                } else if HEADER_EXT.contains(&ext) {
                    headers.push(p);
                }
            }
        }
    }
    if sources.is_empty() {
        bail!(
            "{} holds no source files ({})",
            dir.display(),
            SOURCE_EXT
                .iter()
                .map(|e| format!(".{e}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    sources.sort();
    headers.sort();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(a.seed);
    let nh = headers.len() as u32;
    let includes = (0..sources.len())
        .map(|_| {
            if nh == 0 {
                Vec::new()
            } else {
                (0..a.headers_per_job.min(nh))
                    .map(|_| rng.random_range(0..nh))
                    .collect()
            }
        })
        .collect();
    Ok(Tree {
        sources: sources
            .into_iter()
            .map(|(p, l)| (super::cpath(&p), l))
            .collect(),
        headers: headers.iter().map(|p| super::cpath(p)).collect(),
        includes,
        setup_s: t_setup.elapsed().as_secs_f64(),
    })
}

/// The build as a [`fsbench_harness::measure::Measurement`]: the run directory and (generated) tree
/// are made in `prepare`, the jobs and the link are measured.
struct Build<'a> {
    a: &'a BuildArgs,
    parent: PathBuf,
    rd: Option<fsbench_harness::measure::guard::RunDirGuard>,
    tree: Option<Tree>,
}

pub fn main(a: &BuildArgs) -> Result<()> {
    if a.files == 0 || a.dirs == 0 || a.jobs == 0 {
        return Err(fsbench_base::exit::usage(
            "--files, --dirs and -j must be at least 1",
        ));
    }
    a.m.check()?;
    if let Some(src) = &a.src {
        if !src.is_dir() {
            return Err(fsbench_base::exit::usage(format!(
                "--src {}: not a directory",
                src.display()
            )));
        }
    }
    // Everything that can be refused is refused before the run directory exists.
    let parent = fsbench_harness::measure::guard::target_dir(a.dir.as_deref())?;
    // Sources are up to 1.5 x --source-size; each job holds a source and its object, the link
    // holds every object, and the disk holds sources, objects and the program.
    // The jobs first: -j alone can ask for more threads than the machine starts.
    fsbench_harness::measure::guard::check_threads(a.jobs as u64, 0, &format!("-j {}", a.jobs))?;
    // With --heavy-tail one source may be 16 x --source-size, and the whole tree about twice
    // --files x --source-size at most.
    let (hi_size, per_job) = if a.heavy_tail {
        let s = a.source_size.max(64);
        (s.saturating_mul(2), s.saturating_mul(32))
    } else {
        let hi = a.source_size.saturating_add(a.source_size / 2).max(65);
        (hi, hi.saturating_mul(2))
    };
    let link = hi_size.saturating_mul(a.files as u64);
    let jobs_need = per_job.saturating_mul(a.jobs as u64);
    // Named by what asks for most of the memory: the jobs' buffers or the link's.
    let what = if jobs_need > link {
        format!("-j {} with --source-size {}", a.jobs, a.source_size)
    } else {
        format!("--source-size {} with --files {}", a.source_size, a.files)
    };
    fsbench_base::limits::Machine::probe()
        .check_memory(link.saturating_add(jobs_need), &what)
        .map_err(anyhow::Error::msg)?;
    if let Some(free) = fsbench_engine::engine::free_space(&parent) {
        let disk = link.saturating_mul(3);
        if disk > free {
            bail!(
                "--source-size {} with --files {} would write about {} of sources, objects and program, but {} has {} free; lower them",
                a.source_size,
                a.files,
                fsbench_base::units::human_bytes(disk as f64),
                parent.display(),
                fsbench_base::units::human_bytes(free as f64)
            );
        }
    }
    let mut m = Build {
        a,
        parent,
        rd: None,
        tree: None,
    };
    fsbench_harness::measure::measure_and_report(&mut m, &a.m)?;
    Ok(())
}

impl fsbench_harness::measure::Measurement for Build<'_> {
    fn name(&self) -> &str {
        "build"
    }
    fn target(&self) -> PathBuf {
        match &self.a.src {
            Some(s) => s.clone(),
            None => self
                .rd
                .as_ref()
                .map(|r| r.path().to_path_buf())
                .unwrap_or_else(|| self.parent.clone()),
        }
    }
    fn run_dir(&mut self) -> Option<&mut fsbench_harness::measure::guard::RunDirGuard> {
        self.rd.as_mut()
    }
    fn prepare(&mut self) -> Result<()> {
        let rd = fsbench_harness::measure::guard::RunDirGuard::new(RunDir::create(
            &self.parent,
            "build",
            false,
        )?);
        let root = rd.path().to_path_buf();
        self.rd = Some(rd);
        for sub in ["obj", "tmp", "out"] {
            std::fs::create_dir(root.join(sub))?;
        }
        for d in 0..self.a.dirs {
            std::fs::create_dir(root.join(format!("obj/d{d}")))?;
        }
        self.tree = Some(match &self.a.src {
            Some(src) => existing(self.a, &src.canonicalize()?)?,
            None => generate(self.a, &root)?,
        });
        Ok(())
    }
    fn cleanup(&mut self) -> Result<()> {
        match self.rd.take() {
            Some(rd) => rd.finish(self.a.keep),
            None => Ok(()),
        }
    }
    fn run_once(&mut self) -> Result<fsbench_results::stats::Results> {
        let root = self.rd.as_ref().expect("prepared").path().to_path_buf();
        build_once(self.a, &root, self.tree.as_ref().expect("prepared"))
    }
}

fn build_once(a: &BuildArgs, root: &Path, tree: &Tree) -> Result<fsbench_results::stats::Results> {
    let files = tree.sources.len() as u32;
    let next = AtomicUsize::new(0);
    let started_at = super::now_epoch();
    let cpu0 = super::process_cpu(false);
    let t0 = Instant::now();
    let recs = fsbench_harness::measure::guard::run_gated(
        a.jobs,
        |j| format!("build job {j}"),
        "a build job",
        |j| compile_job(a, root, tree, &next, j),
    )?;
    let compile_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let mut merged = super::recorder(OPS);
    for r in &recs {
        merged.merge(r);
    }
    link(a, root, tree, &mut merged);
    let link_s = t1.elapsed().as_secs_f64();
    let secs = t0.elapsed().as_secs_f64();
    let cpu1 = super::process_cpu(false);
    // Process CPU over the measured part (jobs and link), user and system.
    merged.cpu_user_s = cpu1.0 - cpu0.0;
    merged.cpu_sys_s = cpu1.1 - cpu0.1;
    fsbench_base::say!(
        "build: {} sources {}, -j{}: compile {:.3} s, link {:.3} s, elapsed {:.3} s; CPU {:.2} s user, {:.2} s system (tree {} in {:.3} s, not measured)\n",
        files,
        match &a.src {
            Some(d) => format!("from {}", d.display()),
            None => format!("in {} directories", a.dirs),
        },
        a.jobs, compile_s, link_s, secs, merged.cpu_user_s, merged.cpu_sys_s,
        if a.src.is_some() { "listed" } else { "written" },
        tree.setup_s
    );
    let mut r = super::results(
        AppRun {
            name: "build",
            variables: variables(a, tree),
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
    for (k, v) in [
        ("elapsed_s", secs),
        ("compile_s", compile_s),
        ("link_s", link_s),
        ("user_s", merged.cpu_user_s),
        ("system_s", merged.cpu_sys_s),
        ("sources", files as f64),
    ] {
        r.figures.insert(k.to_string(), v);
    }
    Ok(r)
}

/// One compile job: take the next source until none is left; read it and its headers, burn
/// the CPU a compiler would, write temporaries and the object, delete the temporaries.
fn compile_job(a: &BuildArgs, root: &Path, tree: &Tree, next: &AtomicUsize, j: u32) -> Recorder {
    let Tree {
        sources,
        headers,
        includes,
        ..
    } = tree;
    let mut rec = super::recorder(OPS);
    let mut p = PathBuf0::new(root);
    let mut buf = Vec::new();
    let mut hbuf = Vec::new();
    let mut obj = Vec::new();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= sources.len() || fsbench_base::cancel::interrupted() {
            break;
        }
        let d = dir_of(i as u32, a.dirs);
        let path = sources[i].0.as_c_str();
        let n = timed(
            &mut rec.ops[READ_SRC],
            sources[i].1,
            || format!("reading {path:?}"),
            || super::slurp_file(path, &mut buf, 64 * 1024),
        )
        .unwrap_or(0) as usize;
        for h in &includes[i] {
            let path = headers[*h as usize].as_c_str();
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
    let (u, s) = fsbench_results::stats::thread_cpu();
    rec.cpu_user_s = u;
    rec.cpu_sys_s = s;
    rec
}

/// Link: read every object, write one output.
fn link(a: &BuildArgs, root: &Path, tree: &Tree, merged: &mut Recorder) {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let mut p = PathBuf0::new(root);
    for i in 0..tree.sources.len() as u32 {
        if fsbench_base::cancel::interrupted() {
            break;
        }
        let path = p.with(format_args!("obj/d{}/f{i}.o", dir_of(i, a.dirs)));
        if let Some(n) = timed(
            &mut merged.ops[LINK_READ],
            tree.sources[i as usize].1,
            || format!("reading {path:?}"),
            || super::slurp_file(path, &mut buf, 64 * 1024),
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
}

/// The build's parameters, as the Results' variables.
fn variables(a: &BuildArgs, tree: &Tree) -> BTreeMap<String, String> {
    [
        ("files", tree.sources.len().to_string()),
        (
            "src",
            a.src
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "(generated)".into()),
        ),
        ("dirs", a.dirs.to_string()),
        ("jobs", a.jobs.to_string()),
        ("headers", tree.headers.len().to_string()),
        ("headers_per_job", a.headers_per_job.to_string()),
        ("source_size", a.source_size.to_string()),
        ("heavy_tail", a.heavy_tail.to_string()),
        ("cpu_ms", a.cpu_ms.to_string()),
        ("temps", a.temps.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Share of the bytes held by the largest tenth of `n` sizes drawn for `spec`.
    fn top_tenth(spec: &TreeSpec, n: usize) -> f64 {
        let draw = source_sizes(spec);
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(spec.seed);
        let mut v: Vec<usize> = (0..n).map(|_| draw(&mut rng)).collect();
        v.sort_unstable();
        let total: usize = v.iter().sum();
        v[n - n / 10..].iter().sum::<usize>() as f64 / total as f64
    }

    #[test]
    fn the_bytes_drawn_are_the_bytes_written() {
        let spec = TreeSpec::with(&[
            ("files".into(), 12),
            ("dirs".into(), 3),
            ("headers".into(), 4),
            ("source_size".into(), 20_000),
            ("heavy_tail".into(), 1),
            ("seed".into(), 5),
        ]);
        let root = std::env::temp_dir().join(format!("fsbench-tree-bytes-{}", std::process::id()));
        std::fs::create_dir(&root).unwrap();
        generate_tree(&spec, &root).unwrap();
        let mut written = 0;
        let mut stack = vec![root.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(d).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                } else {
                    written += e.metadata().unwrap().len();
                }
            }
        }
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(spec.bytes(), written);
        // Not the nominal 12 x 20,000 + 4 x 2 KiB, which the estimate used before.
        assert_ne!(written, 12 * 20_000 + 4 * 2048);
    }

    #[test]
    fn heavy_tail_puts_much_of_the_bytes_in_few_files() {
        let mut spec = TreeSpec::with(&[("source_size".into(), 8192)]);
        let uniform = top_tenth(&spec, 2000);
        spec = TreeSpec::with(&[("source_size".into(), 8192), ("heavy_tail".into(), 1)]);
        let heavy = top_tenth(&spec, 2000);
        // Uniform 0.5-1.5x: the top tenth holds about 14%; log-normal (σ = 1): about 40%.
        assert!(uniform < 0.16, "{uniform}");
        assert!(heavy > 0.3, "{heavy}");
        let draw = source_sizes(&spec);
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(2);
        let mean = (0..4000).map(|_| draw(&mut rng)).sum::<usize>() as f64 / 4000.0;
        assert!((mean / 8192.0 - 1.0).abs() < 0.15, "{mean}");
    }
}
