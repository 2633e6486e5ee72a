//! `fsbench age DIR ...`: the command, its progress line and its report.

use std::io::{self, Write};
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use super::exec::{self, Exec, Writeback, WritebackPolicy};
use super::plan::{Distances, Op, Phase, Planner, Targets};
use super::profile::Profile;
use crate::engine::rundir::RunDir;
use crate::layout::{LayoutError, LayoutReport};
use crate::owned::trust::{LOCK, MARKER};
use crate::scan::human_bytes;
use crate::scan::snapshot::Snapshot;
use crate::walk::WalkOptions;

/// Name of the aged directory fsbench creates under DIR.
pub const AGED_DIR: &str = "fsbench-aged";
/// State kept in the aged directory so that aging can continue later.
pub const STATE_FILE: &str = ".fsbench-age.json";

/// Arguments of `fsbench age`.
#[derive(clap::Args, Debug)]
pub struct AgeArgs {
    /// Directory on the file system to age; fsbench works in DIR/fsbench-aged/
    /// (created and marked, or continued if it carries fsbench's marker).
    pub dir: PathBuf,
    /// Target fullness of the file system, as df counts it (used / (used + available)).
    #[arg(long, default_value_t = 0.8)]
    pub fill: f64,
    /// Seed: the same seed and starting state give the same operations.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Built-in aging profile (see the list in the error for an unknown name).
    #[arg(long, default_value = "agrawal", conflicts_with = "from_snapshot")]
    pub profile: String,
    /// Age towards the population of a tree scanned with `fsbench scan -o`.
    #[arg(long, value_name = "SNAPSHOT")]
    pub from_snapshot: Option<PathBuf>,
    /// Stop after N churn operations once the target fullness is reached.
    #[arg(long, value_name = "N")]
    pub ops: Option<u64>,
    /// Stop once every distance (total variation) is below --threshold.
    #[arg(long)]
    pub until_converged: bool,
    /// Convergence threshold for --until-converged (total variation; the
    /// age dimension settles around 0.05-0.1 with the published profiles).
    #[arg(long, default_value_t = 0.1)]
    pub threshold: f64,
    /// When what aging writes reaches the file system's block allocator. ext4 and xfs
    /// allocate at writeback (delayed allocation); left to the kernel (`none`), most of the
    /// churn is created and deleted in the page cache before any block is allocated, and the
    /// survivors are allocated late in big batches, so the aged layout depends on the host's
    /// memory, dirty-page settings and speed. `range` (the default) starts writeback of every
    /// write's range right after it, in aging's thread, so blocks are allocated in operation
    /// order, as a file system that allocates on write (FFS) did; it costs about a third more
    /// time than `none`, against several times more for `fsync` (a journal commit per write).
    #[arg(long, value_enum, default_value_t = Writeback::Range, alias = "fsync")]
    pub writeback: Writeback,
    /// Operations between two commits (`syncfs`) under `range` and `syncfs` (0: only at the
    /// end). Freed blocks become reusable when the journal commits; committing in aging's own
    /// time, well inside the file system's commit interval (5 s), keeps that out of the
    /// host's hands too.
    #[arg(long, default_value_t = exec::COMMIT_EVERY, value_name = "N")]
    pub commit_every: u64,
    /// Write every operation to FILE, one line each.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Smith–Seltzer replay: recreate the first snapshot's tree, then apply
    /// the creates, deletes and changes between each pair of consecutive
    /// snapshots.
    #[arg(long, value_name = "SNAPSHOT", num_args = 1.., conflicts_with_all = ["from_snapshot", "until_converged"])]
    pub replay_snapshots: Vec<PathBuf>,
    /// In replay, short-lived files created and deleted between two
    /// snapshots (per interval), beside the files created there.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub short_lived: u64,
    /// Write the report as JSON to FILE ("-" for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress lines.
    #[arg(short, long)]
    pub quiet: bool,
    /// Threads issuing the operations (profile aging only). One plans every operation in
    /// order, as with one thread; the operations in directory number d go to thread d % N,
    /// and directories are made before any operation in them is handed out, so a seed gives
    /// the same tree (names, sizes, content) whatever N. Only a full file system (short
    /// writes reach the plan later) can make the trees differ.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256), conflicts_with_all = ["replay_snapshots", "next_version"])]
    pub threads: u32,
    /// Write a next version of the tree SRC (SRC is only read) into a new marked directory
    /// DIR/fsbench-next-version-<unique>/tree/, with --keep of its files unchanged.
    #[arg(long, value_name = "SRC", requires = "keep", conflicts_with_all = ["from_snapshot", "replay_snapshots", "until_converged", "ops"])]
    pub next_version: Option<PathBuf>,
    /// With --next-version: share of files kept unchanged (the new tree's "files same", 0..1).
    #[arg(long, value_name = "F", requires = "next_version")]
    pub keep: Option<f64>,
    /// With --next-version: share of SRC's bytes the kept files hold (0..1): the kept files
    /// are chosen to hold it, and each added file takes a removed file's size.
    #[arg(long, value_name = "B", requires = "keep")]
    pub keep_bytes: Option<f64>,
    /// With --next-version: share of the other files edited in place; the rest are removed
    /// and as many new files added.
    #[arg(
        long,
        value_name = "F",
        default_value_t = 0.5,
        requires = "next_version"
    )]
    pub edit_share: f64,
}

impl AgeArgs {
    /// The writeback policy these arguments ask for.
    pub fn writeback(&self) -> WritebackPolicy {
        WritebackPolicy {
            policy: self.writeback,
            commit_every: self.commit_every,
        }
    }
}

/// Layout facts before or after aging.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LayoutFacts {
    pub files: u64,
    pub scored_files: u64,
    pub blocks: u64,
    pub fragments: u64,
    /// Smith–Seltzer aggregate score; `None` without multi-block files.
    pub score: Option<f64>,
    /// Files per number of fragments (log2 buckets: 1, 2-3, 4-7, ...).
    pub fragments_per_file: Vec<crate::scan::summary::Log2Row>,
}

impl From<&LayoutReport> for LayoutFacts {
    fn from(r: &LayoutReport) -> Self {
        LayoutFacts {
            files: r.files,
            scored_files: r.scored_files,
            blocks: r.blocks,
            fragments: r.fragments,
            score: r.score,
            fragments_per_file: r.fragments_per_file.clone(),
        }
    }
}

/// The report of one `fsbench age` run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgeReport {
    pub schema_version: u32,
    pub fsbench_version: String,
    pub dir: String,
    /// "profile" or "replay".
    pub mode: String,
    pub profile: Option<String>,
    pub seed: u64,
    /// When written data reached the allocator, and how often the journal was committed.
    pub writeback: WritebackPolicy,
    pub target_fill: f64,
    /// Whether the aged directory existed (aging continued).
    pub continued: bool,
    pub elapsed_s: f64,
    /// File operations (mkdirs not counted).
    pub ops: u64,
    pub ops_per_s: f64,
    /// Operations after the target fullness was reached.
    pub churn_ops: u64,
    pub phase: Phase,
    pub counts: exec::ExecCounts,
    pub bytes_written: u64,
    pub live_files: u64,
    pub live_bytes: u64,
    /// Usage as aging modelled it (the target it steers by) and the target.
    pub model_used_bytes: u64,
    pub target_used_bytes: u64,
    pub fullness_start: f64,
    pub fullness_end: f64,
    pub capacity_bytes: u64,
    pub distances: Option<Distances>,
    /// The live population against the profile, bucket by bucket.
    pub distributions: Option<super::plan::Distributions>,
    pub threshold: f64,
    pub converged: bool,
    pub interrupted: bool,
    pub layout_before: Option<LayoutFacts>,
    pub layout_after: Option<LayoutFacts>,
    /// Why the layout score is missing, if it is.
    pub layout_note: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    clock: u64,
    seed: u64,
    profile: String,
}

/// Layout of the aged directory; `Err(note)` where FIEMAP is unsupported.
fn layout_of(dir: &Path) -> Result<LayoutFacts, String> {
    let opts = WalkOptions::default();
    match crate::layout::layout(dir, &opts, true, 0) {
        Ok(r) => Ok(LayoutFacts::from(&r)),
        Err(e) => match e.downcast_ref::<LayoutError>() {
            Some(LayoutError::Unsupported { fs, .. }) => Err(format!(
                "FIEMAP is not supported on {fs}: no layout score here"
            )),
            _ => Err(format!("layout failed: {e:#}")),
        },
    }
}

/// What a continued aged directory already holds, in a deterministic order.
struct Existing {
    /// (path, depth, name number)
    dirs: Vec<(String, u32, u64)>,
    /// (id, index into dirs + 1 (0 = root), size)
    files: Vec<(u64, u32, u64)>,
    foreign: u64,
    /// The first few entries left alone, with the reason.
    examples: Vec<String>,
}

/// Read the aged directory through the owned-tree layer: only directories and files of its
/// own, on its own mount, with aging's names, are adopted; a mount point, a hard link to data
/// elsewhere, another user's file or any other name is counted as foreign and never touched.
fn read_existing(root: RawFd) -> io::Result<Existing> {
    use crate::owned::audit::{self, Verdict};
    let mut ex = Existing {
        dirs: Vec::new(),
        files: Vec::new(),
        foreign: 0,
        examples: Vec::new(),
    };
    // The adopted directories by path: index into ex.dirs + 1 (the root is 0).
    let mut index: std::collections::HashMap<Vec<u8>, u32> = Default::default();
    index.insert(Vec::new(), 0);
    let sum = audit::walk(root, &mut |e| {
        let parent = &e.rel[..e.rel.len() - e.name().len()];
        let Some(&di) = index.get(parent.strip_suffix(b"/").unwrap_or(parent)) else {
            return Ok(()); // inside a directory that was not adopted
        };
        let name = String::from_utf8_lossy(e.name());
        if e.depth == 0 && (name == MARKER || name == LOCK || name == STATE_FILE) {
            return Ok(());
        }
        let num = |p: char| name.strip_prefix(p).and_then(|n| n.parse::<u64>().ok());
        match (e.verdict == Verdict::Ours, num('d'), num('f')) {
            (true, Some(n), _) if e.is_dir() => {
                let rel = String::from_utf8_lossy(e.rel).into_owned();
                ex.dirs.push((rel, e.depth + 1, n));
                index.insert(e.rel.to_vec(), ex.dirs.len() as u32);
            }
            (true, _, Some(n)) if e.is_file() => ex.files.push((n, di, e.stat.st_size as u64)),
            _ => ex.foreign += 1,
        }
        Ok(())
    })?;
    ex.examples = sum.examples;
    Ok(ex)
}

fn fmt_dist(d: &Distances) -> String {
    let mut s = format!("size {:.3} depth {:.3}", d.size.tv, d.depth.tv);
    if let Some(a) = d.age {
        s += &format!(" age {:.3}", a.tv);
    }
    s
}

/// `fsbench age`.
pub fn run(args: AgeArgs) -> anyhow::Result<()> {
    if let (Some(src), Some(keep)) = (&args.next_version, args.keep) {
        let share = super::nextver::Share {
            files: keep,
            bytes: args.keep_bytes,
        };
        let r = super::nextver::next_version(src, &args.dir, share, args.edit_share, args.seed)?;
        if let Some(j) = &args.json {
            crate::report::out::write_json(j, &r)?;
        }
        if args.json.as_deref() != Some(Path::new("-")) {
            crate::outln!(
                "next version of {} written to {}\n  {} files: kept {}, edited {}, removed {}, added {}\n  files same {:.1}%  bytes same {:.1}%",
                r.src, r.out, r.src_files, r.kept, r.edited, r.removed, r.added, r.files_same_pct, r.bytes_same_pct
            );
        }
        return Ok(());
    }
    if !(0.0..=0.99).contains(&args.fill) {
        bail!(
            "--fill {} is outside 0.0..0.99 (a fraction of the file system)",
            args.fill
        );
    }
    let parent = args
        .dir
        .canonicalize()
        .with_context(|| format!("target directory {}", args.dir.display()))?;
    // Validate what can be validated before the aging directory exists.
    if args.replay_snapshots.is_empty() {
        match &args.from_snapshot {
            Some(p) => {
                // Its header, read now: a regular file (a FIFO would wait), and a snapshot.
                crate::scan::snapshot::Snapshot::open(p)
                    .with_context(|| format!("cannot read snapshot {}", p.display()))?;
            }
            None => {
                Profile::builtin(&args.profile)?;
            }
        }
    }
    // One thread allocates everything aging writes, on one CPU (see `sys::cpu`), from the
    // marker on; several threads are not held (their layout depends on timing anyway).
    let pin = match args.threads {
        1 => Some(crate::sys::cpu::pin_to_first_cpu().context("holding aging on one CPU")?),
        _ => None,
    };
    let rd = RunDir::create(&parent, "aged", true)?;
    let root = rd.path.clone();
    let r = age_in(&args, &rd, pin);
    if r.is_err() && rd.fresh && only_marker(&root) {
        // A failed start leaves nothing behind: the directory holds nothing but its marker.
        let _ = rd.remove();
    }
    r
}

/// Whether a run directory holds nothing but fsbench's marker.
fn only_marker(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|it| {
        it.filter_map(|e| e.ok())
            .all(|e| e.file_name() == crate::engine::rundir::MARKER)
    })
}

fn age_in(args: &AgeArgs, rd: &RunDir, pin: Option<crate::sys::cpu::Pinned>) -> anyhow::Result<()> {
    let root = rd.path.clone();
    crate::engine::install_signal_handlers();
    let started = Instant::now();
    let mut ex = Exec::new(&root, args.seed, args.writeback(), args.log.as_deref())?;
    ex.settle(&[MARKER, LOCK])
        .context("writing back the marker")?;
    ex.syncfs().context("syncfs before aging")?;
    let (fullness_start, used0, cap) = exec::fullness(&root)?;
    let layout_before = layout_of(&root);

    let mut report = AgeReport {
        schema_version: 1,
        fsbench_version: env!("CARGO_PKG_VERSION").into(),
        dir: root.display().to_string(),
        mode: "profile".into(),
        profile: None,
        seed: args.seed,
        writeback: args.writeback(),
        target_fill: args.fill,
        continued: !rd.fresh,
        elapsed_s: 0.0,
        ops: 0,
        ops_per_s: 0.0,
        churn_ops: 0,
        phase: Phase::Fill,
        counts: Default::default(),
        bytes_written: 0,
        live_files: 0,
        live_bytes: 0,
        model_used_bytes: 0,
        target_used_bytes: 0,
        fullness_start,
        fullness_end: fullness_start,
        capacity_bytes: cap,
        distances: None,
        distributions: None,
        threshold: args.threshold,
        converged: false,
        interrupted: false,
        layout_before: layout_before.as_ref().ok().cloned(),
        layout_after: None,
        layout_note: None,
    };

    if !args.replay_snapshots.is_empty() {
        report.mode = "replay".into();
        super::replay::replay(args, &root, &mut ex, &mut report)?;
    } else {
        age_profile(args, &root, &mut ex, &mut report, used0, cap)?;
    }
    ex.finish()?;
    ex.commit().context("syncfs after aging")?;
    // The layout walk's threads may run anywhere.
    drop(pin);
    let (fullness_end, _, _) = exec::fullness(&root)?;
    report.fullness_end = fullness_end;
    report.counts = ex.counts.clone();
    report.bytes_written = ex.counts.bytes_written;
    report.elapsed_s = started.elapsed().as_secs_f64();
    report.ops_per_s = report.ops as f64 / report.elapsed_s.max(1e-9);
    match layout_of(&root) {
        Ok(l) => report.layout_after = Some(l),
        Err(note) => report.layout_note = Some(note),
    }
    if let Err(note) = layout_before {
        report.layout_note.get_or_insert(note);
    }
    crate::report::out::emit_report(&report, args.json.as_deref())?;
    if report.interrupted {
        bail!("interrupted after {} operations", report.ops);
    }
    Ok(())
}

fn age_profile(
    args: &AgeArgs,
    root: &Path,
    ex: &mut Exec,
    report: &mut AgeReport,
    used0: u64,
    cap: u64,
) -> anyhow::Result<()> {
    let profile = load_profile(args)?;
    report.profile = Some(profile.name.clone());
    let state_path = root.join(STATE_FILE);
    let state_name = std::ffi::CString::new(STATE_FILE).expect("no NUL");
    let state: State = match crate::beneath::read_small(ex.dir_fd(), &state_name, 1 << 20) {
        Ok(b) => serde_json::from_slice(&b).unwrap_or_default(),
        Err(_) => State::default(),
    };
    let mut pl = planner_on(args, (root, ex.dir_fd()), &profile, state.clock, used0, cap)?;
    let (done, churn) = age_loop(args, root, ex, report, &mut pl)?;
    let d = pl.distances();
    report.converged |= pl.phase == Phase::Churn && d.max_tv() < args.threshold;
    report.distances = Some(d);
    report.distributions = Some(pl.distributions());
    report.ops = done;
    report.churn_ops = churn;
    report.phase = pl.phase;
    report.live_files = pl.live_files() as u64;
    report.live_bytes = pl.live_bytes();
    report.model_used_bytes = pl.used;
    report.target_used_bytes = pl.budget;
    let st = State {
        clock: pl.clock,
        seed: args.seed,
        profile: profile.name.clone(),
    };
    crate::owned::put(ex.dir_fd(), &state_name, &serde_json::to_vec_pretty(&st)?)
        .and_then(|()| ex.settle(&[STATE_FILE]))
        .with_context(|| format!("writing {}", state_path.display()))?;
    Ok(())
}

/// The profile to age towards: a snapshot's (`--from-snapshot`) or a built-in one.
fn load_profile(args: &AgeArgs) -> anyhow::Result<Profile> {
    Ok(match &args.from_snapshot {
        Some(p) => {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "snapshot".into());
            let stream = Snapshot::open(p)
                .with_context(|| format!("cannot read snapshot {}", p.display()))?;
            Profile::from_snapshot(&name, stream)?
        }
        None => Profile::builtin(&args.profile)?,
    })
}

/// A planner for `profile` that owns what an earlier aging left in `root`: its
/// directories and files are adopted, what they occupy counted as its own.
fn planner_on(
    args: &AgeArgs,
    (root, root_fd): (&Path, RawFd),
    profile: &Profile,
    clock: u64,
    used0: u64,
    cap: u64,
) -> anyhow::Result<Planner> {
    let existing = read_existing(root_fd).context("reading the aged directory")?;
    if existing.foreign > 0 {
        crate::errln!(
            "age: {} entries in {} are not aging's own (not d<N>/f<N> of yours on its mount); they are left alone{}{}",
            existing.foreign,
            root.display(),
            if existing.examples.is_empty() { "" } else { ": " },
            existing.examples.join("; ")
        );
    }
    let block = exec::block_size(root)?;
    let ours: u64 = existing
        .files
        .iter()
        .map(|f| f.2.div_ceil(block) * block)
        .sum::<u64>()
        + existing.dirs.len() as u64 * block;
    let budget = (args.fill * cap as f64) as u64;
    let targets = Targets::from_profile(profile);
    let mut pl = Planner::new(
        targets,
        args.seed,
        clock,
        used0.saturating_sub(ours),
        budget,
        block,
    );
    let mut dir_index = vec![0u32];
    for (path, depth, name) in existing.dirs {
        dir_index.push(pl.adopt_dir(path, depth, name));
    }
    for (id, di, size) in existing.files {
        pl.adopt_file(id, dir_index[di as usize], size);
    }
    if pl.used >= pl.budget {
        pl.phase = Phase::Churn;
    }
    Ok(pl)
}

/// Fill, then churn until `--ops`, convergence or an interrupt; the operations done and
/// how many of them churned.
fn age_loop(
    args: &AgeArgs,
    root: &Path,
    ex: &mut Exec,
    report: &mut AgeReport,
    pl: &mut Planner,
) -> anyhow::Result<(u64, u64)> {
    let max_churn = match (args.ops, args.until_converged) {
        (Some(n), _) => n,
        (None, _) => {
            // Until converged, but never forever: fifty population turnovers.
            let n = 50 * (pl.budget as f64 / pl.targets.mean_size()).max(100.0) as u64;
            if !args.until_converged && !args.quiet {
                crate::errln!(
                    "age: no --ops given: churning until converged (at most {n} operations)"
                );
            }
            n
        }
    };
    let stop_on_convergence = args.until_converged || args.ops.is_none();

    let mut pool = super::parallel::Pool::start(root, args)?;
    if pool.is_none() {
        ex.defer_deletes();
    }
    let mut ops = Vec::new();
    let mut rel = String::new();
    let mut first_errors = 0;
    let mut last_progress = Instant::now();
    let t0 = Instant::now();
    let mut done = 0u64;
    let mut churn = 0u64;
    loop {
        if crate::engine::interrupted() {
            report.interrupted = true;
            break;
        }
        if pl.phase == Phase::Churn {
            if churn >= max_churn {
                break;
            }
            if stop_on_convergence
                && churn.is_multiple_of(100)
                && pl.distances().max_tv() < args.threshold
            {
                report.converged = true;
                break;
            }
        }
        let clock = pl.clock;
        pl.next(&mut ops);
        if pl.phase == Phase::Churn {
            churn += 1;
        }
        done += 1;
        for op in &ops {
            let r = match pool.as_mut() {
                Some(p) => p.submit(pl, ex, op, clock, &mut rel),
                None => apply(pl, ex, op, clock, &mut rel),
            };
            if let Err(e) = r {
                ex.counts.errors += 1;
                first_errors += 1;
                if first_errors <= 5 {
                    crate::errln!("age: {e}");
                }
            }
        }
        ex.tick()?;
        for e in std::mem::take(&mut ex.late_errors) {
            first_errors += 1;
            if first_errors <= 5 {
                crate::errln!("age: {e}");
            }
        }
        if !args.quiet && last_progress.elapsed() >= Duration::from_secs(1) {
            last_progress = Instant::now();
            let (f, _, _) = exec::fullness(root).unwrap_or((0.0, 0, 0));
            crate::errln!(
                "age: {:?} ops {done} ({:.0}/s) fullness {:.1}% (target {:.0}%) files {} written {} distance {}",
                pl.phase,
                done as f64 / t0.elapsed().as_secs_f64(),
                f * 100.0,
                args.fill * 100.0,
                pl.live_files(),
                human_bytes(
                    ex.counts.bytes_written + pool.as_ref().map_or(0, |p| p.bytes_written())
                ),
                fmt_dist(&pl.distances()),
            );
        }
    }
    if let Some(p) = pool {
        for e in p.finish(pl, ex)? {
            ex.counts.errors += 1;
            first_errors += 1;
            if first_errors <= 5 {
                crate::errln!("age: {e}");
            }
        }
    }
    Ok((done, churn))
}

/// Write one planned file operation to the operation log (mkdirs are logged where they run).
pub(super) fn log_op(
    pl: &Planner,
    ex: &mut Exec,
    op: &Op,
    clock: u64,
    rel: &mut String,
) -> io::Result<()> {
    match *op {
        Op::Mkdir { dir } => ex.log(format_args!("{clock} mkdir {}", pl.dirs[dir as usize].path)),
        Op::Create {
            id, size, write, ..
        } => {
            pl.file_path(id, rel);
            ex.log(format_args!(
                "{clock} create {rel} size {size} write {write}"
            ))
        }
        Op::Append { id, off, len } => {
            pl.file_path(id, rel);
            ex.log(format_args!("{clock} append {rel} {off}+{len}"))
        }
        Op::Overwrite { id, off, len } => {
            pl.file_path(id, rel);
            ex.log(format_args!("{clock} overwrite {rel} {off}+{len}"))
        }
        Op::Delete { id, dir } => {
            pl.path_in(dir, id, rel);
            ex.log(format_args!("{clock} delete {rel}"))
        }
    }
}

/// Apply one planned operation, logging it.
fn apply(pl: &mut Planner, ex: &mut Exec, op: &Op, clock: u64, rel: &mut String) -> io::Result<()> {
    // Sets `rel` to the file's path for file operations.
    log_op(pl, ex, op, clock, rel)?;
    match *op {
        Op::Mkdir { dir } => ex.mkdir(pl.dirs[dir as usize].path.as_bytes()),
        Op::Create { id, write, .. } => {
            let r = ex.create(rel.as_bytes(), write);
            short(pl, ex, id, r)
        }
        Op::Append { id, off, len } => {
            let r = ex.write(rel.as_bytes(), off, len, true);
            short(
                pl,
                ex,
                id,
                r.map_err(|mut s| {
                    s.written += off;
                    s
                }),
            )
        }
        Op::Overwrite { off, len, .. } => ex
            .write(rel.as_bytes(), off, len, false)
            .map_err(|s| s.error),
        Op::Delete { .. } => ex.delete(rel.as_bytes()),
    }
}

pub(super) fn short(
    pl: &mut Planner,
    ex: &mut Exec,
    id: u64,
    r: Result<(), exec::ShortWrite>,
) -> io::Result<()> {
    match r {
        Ok(()) => Ok(()),
        Err(s) if exec::is_enospc(&s.error) => {
            ex.counts.enospc += 1;
            pl.short_write(id, s.written);
            Ok(())
        }
        Err(s) => Err(s.error),
    }
}

fn fmt_score(s: Option<f64>) -> String {
    s.map(|v| format!("{v:.4}")).unwrap_or_else(|| "-".into())
}

impl crate::report::out::Report for AgeReport {
    fn write_text(&self, mut out: &mut dyn Write) -> io::Result<()> {
        print_report(self, &mut out)
    }
}

/// Print the report as text.
pub fn print_report(r: &AgeReport, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "aged {} ({})", r.dir, r.mode)?;
    if let Some(p) = &r.profile {
        writeln!(out, "  profile            {p}, seed {}", r.seed)?;
    }
    writeln!(
        out,
        "  operations         {} in {:.1} s ({:.0}/s), {} after reaching the target",
        r.ops, r.elapsed_s, r.ops_per_s, r.churn_ops
    )?;
    let c = &r.counts;
    writeln!(
        out,
        "                     creates {} appends {} overwrites {} deletes {} mkdirs {} rmdirs {} fsyncs {}",
        c.creates, c.appends, c.overwrites, c.deletes, c.mkdirs, c.rmdirs, c.fsyncs
    )?;
    if c.enospc > 0 || c.errors > 0 {
        writeln!(
            out,
            "                     out-of-space writes {} errors {}",
            c.enospc, c.errors
        )?;
    }
    writeln!(out, "  bytes written      {}", human_bytes(r.bytes_written))?;
    writeln!(
        out,
        "  live               {} files, {}",
        r.live_files,
        human_bytes(r.live_bytes)
    )?;
    writeln!(
        out,
        "  fullness           {:.1}% -> {:.1}% of {} (target {:.0}%)",
        r.fullness_start * 100.0,
        r.fullness_end * 100.0,
        human_bytes(r.capacity_bytes),
        r.target_fill * 100.0
    )?;
    if let Some(d) = &r.distances {
        writeln!(
            out,
            "  distance (TV/KS)   size {:.3}/{:.3}  depth {:.3}/{:.3}{}",
            d.size.tv,
            d.size.ks,
            d.depth.tv,
            d.depth.ks,
            d.age
                .map(|a| format!("  age {:.3}/{:.3}", a.tv, a.ks))
                .unwrap_or_default()
        )?;
        writeln!(
            out,
            "  converged          {} (threshold {} total variation)",
            if r.converged { "yes" } else { "no" },
            r.threshold
        )?;
    }
    let l = |x: &Option<LayoutFacts>| {
        x.as_ref()
            .map(|l| {
                format!(
                    "{} ({} files, {} blocks, {} fragments)",
                    fmt_score(l.score),
                    l.files,
                    l.blocks,
                    l.fragments
                )
            })
            .unwrap_or_else(|| "-".into())
    };
    writeln!(out, "  layout score       before {}", l(&r.layout_before))?;
    writeln!(out, "                     after  {}", l(&r.layout_after))?;
    if let Some(n) = &r.layout_note {
        writeln!(out, "  note               {n}")?;
    }
    Ok(())
}

#[cfg(test)]
mod report_tests {
    use super::*;
    use crate::age::distance::Distance;
    use crate::age::plan::{Distribution, Distributions};
    use crate::scan::summary::Log2Row;

    /// The HTML report reads aging reports into its own `report::html::Aging` (it stands
    /// below this module): what it reads must be what this report writes.
    #[test]
    fn the_report_reads_what_an_aging_report_writes() {
        let facts = |score: Option<f64>, fragments: u64| LayoutFacts {
            files: 3,
            scored_files: 2,
            blocks: 9,
            fragments,
            score,
            fragments_per_file: vec![Log2Row {
                lo: 1,
                hi: 2,
                count: 3,
                sum: 3,
            }],
        };
        let dist = |n: &str| Distribution {
            buckets: vec![n.into(), "2".into()],
            target: vec![0.25, 0.75],
            actual: vec![0.5, 0.5],
            counts: vec![4, 4],
        };
        let d = |tv: f64| Distance { tv, ks: tv / 2.0 };
        let r = AgeReport {
            schema_version: 1,
            fsbench_version: "0".into(),
            dir: "/x".into(),
            mode: "profile".into(),
            profile: Some("agrawal".into()),
            seed: 1,
            writeback: WritebackPolicy {
                policy: Writeback::Range,
                commit_every: 1000,
            },
            target_fill: 0.5,
            continued: false,
            elapsed_s: 1.5,
            ops: 300,
            ops_per_s: 200.0,
            churn_ops: 100,
            phase: Phase::Churn,
            counts: Default::default(),
            bytes_written: 1,
            live_files: 8,
            live_bytes: 1,
            model_used_bytes: 1,
            target_used_bytes: 1,
            fullness_start: 0.1,
            fullness_end: 0.45,
            capacity_bytes: 1,
            distances: Some(crate::age::plan::Distances {
                size: d(0.1),
                depth: d(0.2),
                age: None,
            }),
            distributions: Some(Distributions {
                size: dist("1K"),
                depth: dist("0"),
                age: None,
            }),
            threshold: 0.1,
            converged: true,
            interrupted: false,
            layout_before: None,
            layout_after: Some(facts(Some(0.9), 12)),
            layout_note: None,
        };
        let text = serde_json::to_string(&r).unwrap();
        let a = crate::report::html::Aging::parse(&text).expect("read as an aging report");
        assert_eq!(a.profile.as_deref(), Some("agrawal"));
        assert_eq!(
            (a.fullness_start, a.fullness_end, a.target_fill),
            (Some(0.1), Some(0.45), Some(Some(0.5)))
        );
        assert_eq!(
            (a.ops, a.elapsed_s, a.converged),
            (Some(300.0), Some(1.5), Some(true))
        );
        let ds = a.distances.unwrap();
        assert_eq!(
            (ds.size.unwrap().tv, ds.depth.unwrap().tv),
            (Some(0.1), Some(0.2))
        );
        assert!(ds.age.is_none());
        let size = a.distributions.unwrap().size.unwrap();
        assert_eq!(size.buckets, ["1K", "2"]);
        assert_eq!(size.target, [Some(0.25), Some(0.75)]);
        assert_eq!(size.actual, [Some(0.5), Some(0.5)]);
        assert_eq!(size.counts, [4, 4]);
        assert!(a.layout_before.is_none());
        let after = a.layout_after.flatten().unwrap();
        assert_eq!((after.score, after.fragments), (Some(0.9), Some(12.0)));
        let row = &after.fragments_per_file[0];
        assert_eq!((row.lo, row.hi, row.count), (1, 2, 3));
        // And the report reads back into the aging code's own type.
        let back: AgeReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back.ops, 300);
    }
}
