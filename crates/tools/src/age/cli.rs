//! `fsbench age DIR ...`: the command, its progress line and its report.

use std::io;
use std::os::fd::RawFd;
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context};

use super::exec::{self, Exec};
use super::plan::{Phase, Planner, Targets};
use super::profile::Profile;
use super::report::{layout_of, AgeReport, LayoutFacts};
use fsbench_base::owned::trust::{LOCK, MARKER};
use fsbench_engine::engine::rundir::RunDir;
use fsbench_engine::scan::snapshot::Snapshot;

use super::args::AgeArgs;
use super::record::{self, FILES_FILE, STATE_FILE};

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
    use fsbench_base::owned::audit::{self, Verdict};
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
        let own = [MARKER, LOCK, STATE_FILE, FILES_FILE];
        if e.depth == 0 && own.contains(&name.as_ref()) {
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

/// `fsbench age`.
pub fn run(args: AgeArgs) -> anyhow::Result<()> {
    if args
        .log
        .as_deref()
        .is_some_and(fsbench_base::console::is_stdout)
    {
        // Refused rather than written to a file named `-`.
        return Err(fsbench_base::exit::usage(
            "--log -: the operation log goes to a file; give its path",
        ));
    }
    fsbench_base::export::check::outputs(&fsbench_base::export::check::Outputs::outputs(&args))?;
    if let (Some(src), Some(keep)) = (&args.next_version, args.keep) {
        fsbench_base::cancel::install_signal_handlers();
        let share = super::nextver::Share {
            files: keep,
            bytes: args.keep_bytes,
        };
        let r = super::nextver::next_version(src, &args.dir, share, args.edit_share, args.seed)?;
        if let Some(j) = &args.json {
            fsbench_base::export::write_json(j, &r)?;
        }
        let text = format!(
            "next version of {} written to {}\n  {} files: kept {}, edited {}, removed {}, added {}\n  files same {:.1}%  bytes same {:.1}%\n",
            r.src, r.out, r.src_files, r.kept, r.edited, r.removed, r.added, r.files_same_pct, r.bytes_same_pct
        );
        let displaced = fsbench_base::export::report::Displaced::Dropped;
        return fsbench_base::export::report::text_beside(
            &[args.json.as_deref()],
            displaced,
            |o| o.write_all(fsbench_base::console::printable(&text).as_bytes()),
        );
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
    // Checked before anything opens it: a FIFO would hold the open for ever.
    fsbench_base::input::check_dir(&parent).map_err(|e| {
        anyhow::anyhow!(
            "{}: {e}; give the directory whose file system is to be aged",
            args.dir.display()
        )
    })?;
    // Validate what can be validated before the aging directory exists.
    if args.replay_snapshots.is_empty() {
        match &args.from_snapshot {
            Some(p) => {
                // Its header, read now: a regular file (a FIFO would wait), and a snapshot.
                fsbench_engine::scan::snapshot::Snapshot::open(p)
                    .with_context(|| format!("cannot read snapshot {}", p.display()))?;
            }
            None => {
                Profile::builtin(&args.profile)?;
            }
        }
    }
    memory_fill(&parent, args.fill)?;
    if let Some(note) = timed_commit(&parent) {
        fsbench_base::errln!("{note}");
    }
    // One thread allocates everything aging writes, on one CPU (see `sys::cpu`), from the
    // marker on; several threads are not held (their layout depends on timing anyway).
    let pin = match args.threads {
        1 => Some(fsbench_base::sys::cpu::pin_to_first_cpu().context("holding aging on one CPU")?),
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

/// Refuse to fill a file system held in memory (tmpfs, ramfs) with more than the machine
/// can spare: `/dev/shm` is half the memory by default, so the default fill of 0.8 took 40%
/// of the machine's memory, and a larger tmpfs more than it has.
fn memory_fill(dir: &Path, fill: f64) -> anyhow::Result<()> {
    let Ok(magic) = fsbench_base::sys::fsmagic::of_path(dir) else {
        return Ok(());
    };
    let kind = fsbench_base::sys::fsmagic::name(magic);
    if kind != "tmpfs" && kind != "ramfs" {
        return Ok(());
    }
    let (_, used, cap) = exec::fullness(dir)?;
    let need = ((fill * cap as f64) as u64).saturating_sub(used);
    let what = format!(
        "aging {} to --fill {fill} ({kind}, held in memory)",
        dir.display()
    );
    fsbench_base::limits::Machine::probe()
        .check_memory(need, &what)
        .map_err(|e| anyhow::anyhow!("{e}: give a smaller --fill, or age a disk or image"))
}

/// A note when `dir` is on an ext4 that commits its journal on a timer shorter than an
/// aging: the blocks a delete frees return to the allocator at the commit, so the aged
/// layout then depends on how fast aging ran (docs/guide/aging.md has the measurement).
/// fsbench does not remount a file system it did not mount; an experiment's aging of its
/// own images sets the interval itself.
fn timed_commit(dir: &Path) -> Option<String> {
    let (mp, fs, opts, _) = fsbench_results::stats::host::mount_of(dir)?;
    let secs = commit_seconds(&fs, &opts)?;
    (secs < 3600).then(|| {
        format!(
            "fsbench: note: ext4 at {mp} commits its journal every {secs} s, and the blocks aging's \
             deletes free come back at each commit: the aged layout depends on how fast aging \
             runs, not only on the seed. For a layout of the seed alone: mount -o \
             remount,commit=86400 {mp} while aging (commit=0 restores the default)"
        )
    })
}

/// ext4's journal commit interval in seconds from its mount options (5 when not given or
/// 0); `None` for other file systems.
fn commit_seconds(fs: &str, opts: &str) -> Option<u64> {
    if fs != "ext4" {
        return None;
    }
    let given = opts
        .split(',')
        .rev()
        .filter_map(|o| o.strip_prefix("commit="))
        .find_map(|v| v.parse::<u64>().ok());
    Some(given.filter(|&s| s > 0).unwrap_or(5))
}

/// Whether a run directory holds nothing but fsbench's marker.
fn only_marker(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .is_ok_and(|it| it.filter_map(|e| e.ok()).all(|e| e.file_name() == MARKER))
}

fn age_in(
    args: &AgeArgs,
    rd: &RunDir,
    pin: Option<fsbench_base::sys::cpu::Pinned>,
) -> anyhow::Result<()> {
    let root = rd.path.clone();
    fsbench_base::cancel::install_signal_handlers();
    let started = Instant::now();
    let mut ex = Exec::new(&root, args.seed, args.writeback(), args.log.as_deref())?;
    ex.settle(&[MARKER, LOCK])
        .context("writing back the marker")?;
    ex.syncfs().context("syncfs before aging")?;
    let (fullness_start, used0, cap) = exec::fullness(&root)?;
    let layout_before = layout_of(&root);

    let cpu = pin.as_ref().map(|p| p.cpu);
    let mut report = new_report(args, rd, (fullness_start, cap), &layout_before, cpu);
    if !args.replay_snapshots.is_empty() {
        report.mode = "replay".into();
        super::replay::replay(args, &root, &mut ex, &mut report)?;
        report.days = report.ops as f64 / args.day_ops as f64;
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
    fsbench_base::export::report::emit(&report, args.json.as_deref())?;
    if report.interrupted {
        bail!("interrupted after {} operations", report.ops);
    }
    Ok(())
}

/// The report before aging, with what is known at the start.
fn new_report(
    args: &AgeArgs,
    rd: &RunDir,
    (fullness_start, cap): (f64, u64),
    layout_before: &Result<LayoutFacts, String>,
    cpu: Option<usize>,
) -> AgeReport {
    AgeReport {
        schema_version: 1,
        fsbench_version: env!("CARGO_PKG_VERSION").into(),
        dir: rd.path.display().to_string(),
        mode: "profile".into(),
        profile: None,
        seed: args.seed,
        writeback: args.writeback(),
        cpu,
        day_ops: args.day_ops,
        days: 0.0,
        recent: None,
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
    }
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
    let state = record::read_state(ex.dir_fd());
    let mut pl = planner_on(args, (root, ex.dir_fd()), &profile, state.clock, used0, cap)?;
    let (done, churn) = super::churn::age_loop(args, root, ex, report, &mut pl)?;
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
    report.days = pl.clock as f64 / args.day_ops as f64;
    report.recent = Some(recent(&pl, args.hot_days, args.day_ops));
    save(args, &pl, &profile, ex).with_context(|| {
        format!(
            "writing {} and {} in {}",
            STATE_FILE,
            FILES_FILE,
            root.display()
        )
    })
}

/// The live files written in the last `days` days, and their bytes.
fn recent(pl: &Planner, days: u64, day_ops: u64) -> super::report::Recent {
    let since = pl.clock.saturating_sub(days * day_ops);
    let (mut files, mut bytes) = (0, 0);
    for (id, _, modified) in pl.live() {
        if modified >= since {
            files += 1;
            bytes += pl.file(id).map_or(0, |f| f.written);
        }
    }
    super::report::Recent { days, files, bytes }
}

/// Leave the state and the live files' last writes for a later aging or the hot-file
/// benchmark, written back in this thread like everything aging writes.
fn save(args: &AgeArgs, pl: &Planner, profile: &Profile, ex: &mut Exec) -> io::Result<()> {
    let st = record::State {
        clock: pl.clock,
        seed: args.seed,
        profile: profile.name.clone(),
        day_ops: args.day_ops,
    };
    record::write_state(ex.dir_fd(), &st)?;
    let mut rel = String::new();
    let files: Vec<record::LiveFile> = pl
        .live()
        .map(|(id, dir, modified)| {
            pl.path_in(dir, id, &mut rel);
            record::LiveFile {
                path: rel.clone(),
                modified,
            }
        })
        .collect();
    record::write_files(ex.dir_fd(), &files)?;
    ex.settle(&[STATE_FILE, FILES_FILE])
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
        fsbench_base::errln!(
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
    // Their last writes, as the earlier aging recorded them (0 where it did not).
    let modified = record::modified_by_path(record::read_files(root_fd).unwrap_or(None));
    let mut rel = String::new();
    for (id, di, size) in existing.files {
        let dir = dir_index[di as usize];
        pl.path_in(dir, id, &mut rel);
        pl.adopt_file(id, dir, size, modified.get(&rel).copied().unwrap_or(0));
    }
    if pl.used >= pl.budget {
        pl.phase = Phase::Churn;
    }
    Ok(pl)
}

#[cfg(test)]
mod tests {
    use super::commit_seconds;

    #[test]
    fn ext4_commit_interval_is_read_from_its_options() {
        assert_eq!(commit_seconds("ext4", "rw,relatime,rw"), Some(5));
        assert_eq!(commit_seconds("ext4", "rw,commit=0"), Some(5));
        assert_eq!(
            commit_seconds("ext4", "rw,noatime,commit=86400"),
            Some(86400)
        );
        assert_eq!(commit_seconds("xfs", "rw,commit=30"), None);
    }
}
