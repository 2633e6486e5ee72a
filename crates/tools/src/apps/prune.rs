//! `fsbench prune`: the cleaner of the elastic-quota study ("rubberd"). It reads a
//! `fsbench scan -o` snapshot, chooses regular files by a policy (oldest first, largest
//! first, ...) until the space they hold reaches `--free`, and deletes them, reporting
//! elapsed, user and system time and what it deleted.
//!
//! It deletes only beneath a directory fsbench created and marked (a run directory, see
//! docs/safety.md) or beneath the directory the user names with `--really-delete-under`.
//! Every deletion starts from a descriptor of that directory: the file's directory is opened
//! beneath it without following any link (`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`),
//! the file is looked at with `fstatat(AT_SYMLINK_NOFOLLOW)` and removed with `unlinkat` in
//! that directory. A file that is no longer the one the snapshot saw — another type (a
//! link), another device, size, modification or change time — is skipped and counted. The
//! snapshot format keeps no inode numbers: the change time stands in for them (a file
//! replaced under the same name has a new one).
//!
//! Without a snapshot, `--dir DIR` makes the whole study self-contained (the plan's `prune`
//! kind): a run directory in DIR, a generated tree in it (`--files`, `--dirs`,
//! `--file-size`, modification and access times spread over a year), its snapshot, then the
//! measured deletion; the run directory goes afterwards.

use super::{AppRun, OpTable};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use fsbench_base::beneath::{lstat_at, open_dir_path};
use fsbench_base::owned::trust;
use fsbench_engine::engine::rundir::RunDir;
use fsbench_engine::scan::snapshot::{Entry, Kind, Snapshot};
use fsbench_harness::measure::guard::RunDirGuard;
use fsbench_model::model::FlowopKind;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub const OPS: OpTable = &[("unlink", FlowopKind::DeleteFile)];

/// Which files go first.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Least recently modified first.
    Oldest,
    /// Least recently accessed first.
    Lru,
    /// Largest first.
    Largest,
    /// Smallest first.
    Smallest,
    /// In an order drawn from --seed.
    Random,
}

/// `fsbench prune`.
#[derive(Args, Debug, Clone)]
pub struct PruneArgs {
    /// A snapshot from `fsbench scan DIR -o SNAPSHOT`. Without it, --dir makes a tree, scans
    /// it and prunes it.
    pub snapshot: Option<PathBuf>,
    /// Delete until the files deleted held this much space (allocated blocks; K, M, G, T).
    #[arg(long, value_name = "SIZE")]
    pub free: String,
    /// The order in which files are chosen.
    #[arg(long, value_enum, default_value_t = Policy::Oldest)]
    pub policy: Policy,
    /// The tree's root, when it is not where the snapshot was taken.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Allow deleting beneath DIR, a directory fsbench did not create (nothing outside it).
    #[arg(long, value_name = "DIR")]
    pub really_delete_under: Option<PathBuf>,
    /// Seed of --policy random and of the generated tree.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Without SNAPSHOT: the directory in which a run directory with a generated tree is made.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Without SNAPSHOT: files of the generated tree.
    #[arg(long, default_value_t = 2000)]
    pub files: u64,
    /// Without SNAPSHOT: directories the files are spread over.
    #[arg(long, default_value_t = 50)]
    pub dirs: u64,
    /// Without SNAPSHOT: mean file size (sizes from half to one and a half times it).
    #[arg(long, default_value = "16K", value_name = "SIZE")]
    pub file_size: String,
    /// Keep the run directory afterwards.
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub m: fsbench_harness::measure::MeasureArgs,
}

fsbench_harness::outputs_of_measurement!(PruneArgs);

/// What one pruning did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Pruned {
    pub files_deleted: u64,
    /// Sum of the deleted files' sizes.
    pub bytes_deleted: u64,
    /// Sum of their allocated space (st_blocks × 512), as the snapshot saw it.
    pub freed_bytes: u64,
    /// Chosen files that were no longer what the snapshot saw (type, device, size, times).
    pub skipped_changed: u64,
    /// Chosen files that were gone.
    pub skipped_missing: u64,
    /// Files that could not be deleted (permission, ...), with the first error.
    pub errors: u64,
    pub first_error: Option<String>,
    pub candidates: u64,
}

/// The files a policy chooses from `entries` (regular files only, never fsbench's own marker
/// or lock), in order, until their allocated space reaches `free`; each is deleted (or
/// skipped) in that order.
pub fn choose(mut files: Vec<Entry>, policy: Policy, free: u64, seed: u64) -> Vec<Entry> {
    files.retain(|e| e.kind == Kind::File && !own_file(&e.path));
    match policy {
        Policy::Oldest => files.sort_by(|a, b| a.mtime.cmp(&b.mtime).then(a.path.cmp(&b.path))),
        Policy::Lru => files.sort_by(|a, b| a.atime.cmp(&b.atime).then(a.path.cmp(&b.path))),
        Policy::Largest => files.sort_by(|a, b| b.size.cmp(&a.size).then(a.path.cmp(&b.path))),
        Policy::Smallest => files.sort_by(|a, b| a.size.cmp(&b.size).then(a.path.cmp(&b.path))),
        Policy::Random => {
            use rand::seq::SliceRandom;
            files.sort_by(|a, b| a.path.cmp(&b.path));
            files.shuffle(&mut rand_pcg::Pcg64::seed_from_u64(seed));
        }
    }
    let mut total = 0u64;
    let mut n = 0;
    for e in &files {
        if total >= free {
            break;
        }
        total += e.blocks * 512;
        n += 1;
    }
    files.truncate(n);
    files
}

/// fsbench's run-directory marker and lock, which a pruning never deletes.
fn own_file(path: &[u8]) -> bool {
    let name = path.rsplit(|b| *b == b'/').next().unwrap_or(path);
    trust::is_own_name(name)
}

/// An open directory beneath which deleting is allowed, and the root of the tree in it.
pub struct Confined {
    pub root: PathBuf,
    root_fd: OwnedFd,
    root_dev: u64,
    /// What allowed it: a marked run directory, or --really-delete-under.
    pub allowed_by: String,
}

impl Confined {
    /// `root`, checked to lie beneath a marked run directory or beneath `really`.
    pub fn open(root: &Path, really: Option<&Path>) -> Result<Confined> {
        let canon = root
            .canonicalize()
            .with_context(|| format!("prune: the tree's root {}", root.display()))?;
        let (base, allowed_by) = match really {
            Some(d) => {
                let d = d
                    .canonicalize()
                    .with_context(|| format!("--really-delete-under {}", d.display()))?;
                if !canon.starts_with(&d) {
                    bail!(
                        "prune: the tree's root {} is not beneath --really-delete-under {}; nothing deleted",
                        canon.display(),
                        d.display()
                    );
                }
                (d.clone(), format!("--really-delete-under {}", d.display()))
            }
            None => match canon.ancestors().find(|a| trust::is_run_dir(a)) {
                Some(m) => (m.to_path_buf(), format!("the run directory {}", m.display())),
                None => bail!(
                    "prune: {} is not inside a directory fsbench created and marked (no {} of yours in it or above it, in a directory only you can write); nothing deleted. To delete in a tree fsbench did not create, name the directory beneath which deleting is allowed with --really-delete-under DIR",
                    canon.display(),
                    trust::MARKER
                ),
            },
        };
        let base_fd = std::fs::File::open(&base)
            .with_context(|| format!("prune: opening {}", base.display()))?;
        let rel = canon.strip_prefix(&base).expect("checked beneath");
        // From a marked run directory, the root must be on the run directory's own mount (a
        // file system mounted inside it is not fsbench's); a directory the user named may be
        // a mount point, and the root in it is opened as the user named it.
        let root_fd = if really.is_some() {
            std::fs::File::open(&canon).map(OwnedFd::from)
        } else {
            open_dir_path(base_fd.as_raw_fd(), rel.as_os_str().as_bytes())
                .map_err(fsbench_base::owned::explain)
        }
        .with_context(|| {
            format!(
                "prune: opening {} beneath {}",
                canon.display(),
                base.display()
            )
        })?;
        let root_dev = fsbench_base::beneath::fstat(root_fd.as_raw_fd())?.st_dev;
        Ok(Confined {
            root: canon,
            root_fd,
            root_dev,
            allowed_by,
        })
    }

    /// Delete `files` (paths relative to the root) in order, each checked against what the
    /// snapshot saw. Returns what was done and the unlink latencies.
    pub fn delete(&self, files: &[Entry], rec: &mut fsbench_results::stats::Recorder) -> Pruned {
        let mut p = Pruned {
            candidates: files.len() as u64,
            ..Default::default()
        };
        for e in files {
            if fsbench_base::cancel::interrupted() {
                break;
            }
            match self.delete_one(e, &mut rec.ops[0]) {
                Ok(Some(())) => {
                    p.files_deleted += 1;
                    p.bytes_deleted += e.size;
                    p.freed_bytes += e.blocks * 512;
                }
                Ok(None) => p.skipped_changed += 1,
                Err(err) if err.raw_os_error() == Some(libc::ENOENT) => p.skipped_missing += 1,
                Err(err) => {
                    p.errors += 1;
                    if p.first_error.is_none() {
                        p.first_error =
                            Some(format!("{}: {err}", self.root.join(e.path()).display()));
                    }
                }
            }
        }
        p
    }

    /// `Ok(None)`: the file is not the one the snapshot saw, left alone.
    fn delete_one(
        &self,
        e: &Entry,
        rec: &mut fsbench_results::stats::OpRecorder,
    ) -> std::io::Result<Option<()>> {
        let (dir, name) = match e.path.iter().rposition(|b| *b == b'/') {
            Some(i) => (&e.path[..i], &e.path[i + 1..]),
            None => (&e.path[..0], &e.path[..]),
        };
        let name = fsbench_base::beneath::component(OsStr::from_bytes(name))?;
        let dfd = open_dir_path(self.root_fd.as_raw_fd(), dir)?;
        let st = lstat_at(dfd.as_raw_fd(), &name)?;
        let same = Kind::from_mode(st.st_mode) == Kind::File
            && st.st_dev == self.root_dev
            && st.st_size as u64 == e.size
            && (st.st_mtime, st.st_mtime_nsec as u32) == (e.mtime.sec, e.mtime.nsec)
            && (st.st_ctime, st.st_ctime_nsec as u32) == (e.ctime.sec, e.ctime.nsec);
        if !same {
            return Ok(None);
        }
        let clock = fsbench_results::stats::clock::global();
        let t0 = clock.now();
        fsbench_base::owned::unlink(dfd.as_raw_fd(), &name)?;
        rec.record(clock.since(t0), 0);
        Ok(Some(()))
    }
}

/// The regular files of a snapshot and the root it recorded.
fn read_snapshot(path: &Path) -> Result<(PathBuf, Vec<Entry>)> {
    let mut s =
        Snapshot::open(path).with_context(|| format!("reading snapshot {}", path.display()))?;
    let root = PathBuf::from(&s.header().root);
    let mut files = Vec::new();
    for e in &mut s {
        let e = e.with_context(|| format!("reading snapshot {}", path.display()))?;
        if e.kind == Kind::File {
            files.push(e);
        }
    }
    Ok((root, files))
}

struct Prune<'a> {
    a: &'a PruneArgs,
    free: u64,
    /// The snapshot to prune by, and the tree's root (given, or made by `prepare`).
    snapshot: Option<PathBuf>,
    root: Option<PathBuf>,
    rd: Option<RunDirGuard>,
}

impl fsbench_harness::measure::Measurement for Prune<'_> {
    fn name(&self) -> &str {
        "prune"
    }
    fn target(&self) -> PathBuf {
        self.root
            .clone()
            .or_else(|| self.a.dir.clone())
            .unwrap_or_else(std::env::temp_dir)
    }
    fn run_dir(&mut self) -> Option<&mut RunDirGuard> {
        self.rd.as_mut()
    }
    fn prepare(&mut self) -> Result<()> {
        if self.a.snapshot.is_some() {
            return Ok(());
        }
        let parent = fsbench_harness::measure::guard::target_dir(self.a.dir.as_deref())?;
        let rd = RunDirGuard::new(RunDir::create(&parent, "prune", false)?);
        let tree = rd.path().join("tree");
        let snap = rd.path().join("tree.snapshot");
        self.rd = Some(rd);
        make_tree(&tree, self.a)?;
        let opts = fsbench_base::walk::WalkOptions {
            cross_mounts: false,
            threads: 1,
        };
        fsbench_engine::scan::scan(&tree, Some(&snap), &opts, 1, None)?;
        self.snapshot = Some(snap);
        self.root = Some(tree);
        Ok(())
    }
    fn cleanup(&mut self) -> Result<()> {
        match self.rd.take() {
            Some(rd) => rd.finish(self.a.keep),
            None => Ok(()),
        }
    }
    fn run_once(&mut self) -> Result<fsbench_results::stats::Results> {
        let snap = self.snapshot.clone().expect("prepared");
        let (recorded, files) = read_snapshot(&snap)?;
        let root = self
            .a
            .root
            .clone()
            .or(self.root.clone())
            .unwrap_or(recorded);
        let conf = Confined::open(&root, self.a.really_delete_under.as_deref())?;
        let chosen = choose(files, self.a.policy, self.free, self.a.seed);
        let started_at = super::now_epoch();
        let cpu0 = super::process_cpu(false);
        let t0 = Instant::now();
        let mut rec = super::recorder(OPS);
        let p = conf.delete(&chosen, &mut rec);
        let secs = t0.elapsed().as_secs_f64();
        let cpu1 = super::process_cpu(false);
        rec.cpu_user_s = cpu1.0 - cpu0.0;
        rec.cpu_sys_s = cpu1.1 - cpu0.1;
        Ok(self.results(&conf, &p, &rec, started_at, secs))
    }
}

impl Prune<'_> {
    fn results(
        &self,
        conf: &Confined,
        p: &Pruned,
        rec: &fsbench_results::stats::Recorder,
        started_at: f64,
        secs: f64,
    ) -> fsbench_results::stats::Results {
        let mut variables = BTreeMap::new();
        variables.insert("root".to_string(), conf.root.display().to_string());
        variables.insert("free".to_string(), self.free.to_string());
        variables.insert(
            "policy".to_string(),
            format!("{:?}", self.a.policy).to_lowercase(),
        );
        let mut notes = vec![format!(
            "prune: {} files deleted ({}, {} allocated) of {} chosen to free {} in {:.3} s; {} skipped as changed, {} gone; deleting allowed by {}",
            p.files_deleted,
            fsbench_base::units::human_bytes_u64(p.bytes_deleted),
            fsbench_base::units::human_bytes_u64(p.freed_bytes),
            p.candidates,
            fsbench_base::units::human_bytes_u64(self.free),
            secs,
            p.skipped_changed,
            p.skipped_missing,
            conf.allowed_by
        )];
        if let Some(e) = &p.first_error {
            notes.push(format!(
                "{} files could not be deleted (first: {e})",
                p.errors
            ));
        }
        if p.freed_bytes < self.free {
            notes.push(format!(
                "freed {} of the {} asked for: the snapshot's files did not hold enough, or some were skipped",
                fsbench_base::units::human_bytes_u64(p.freed_bytes),
                fsbench_base::units::human_bytes_u64(self.free)
            ));
        }
        let mut r = super::results(
            AppRun {
                name: "prune",
                variables,
                seed: self.a.seed,
                run_dir: &conf.root,
                started_at,
                duration_s: secs,
                threads: 1,
                notes,
            },
            OPS,
            rec,
        );
        for (k, v) in [
            ("elapsed_s", secs),
            ("user_s", rec.cpu_user_s),
            ("system_s", rec.cpu_sys_s),
            ("files_deleted", p.files_deleted as f64),
            ("bytes_deleted", p.bytes_deleted as f64),
            ("freed_bytes", p.freed_bytes as f64),
            ("skipped_changed", p.skipped_changed as f64),
            ("skipped_missing", p.skipped_missing as f64),
            ("delete_errors", p.errors as f64),
        ] {
            r.figures.insert(k.to_string(), v);
        }
        r
    }
}

/// A tree of `a.files` files over `a.dirs` directories, sizes from half to one and a half
/// times `a.file_size`, modification and access times spread over the past year.
fn make_tree(tree: &Path, a: &PruneArgs) -> Result<()> {
    let mean = fsbench_base::units::parse_size(&a.file_size)
        .map_err(|e| anyhow::anyhow!("--file-size: {e}"))?;
    std::fs::create_dir(tree)?;
    let mut rng = rand_pcg::Pcg64::seed_from_u64(a.seed);
    let buf = vec![0x5au8; (mean + mean / 2) as usize + 1];
    let now = std::time::SystemTime::now();
    for d in 0..a.dirs.max(1) {
        std::fs::create_dir(tree.join(format!("d{d:04}")))?;
    }
    for f in 0..a.files {
        let p = tree.join(format!("d{:04}/f{f:07}", f % a.dirs.max(1)));
        let size = rng.random_range(mean / 2..=mean + mean / 2) as usize;
        std::fs::write(&p, &buf[..size]).with_context(|| format!("writing {}", p.display()))?;
        let age = |r: &mut rand_pcg::Pcg64| {
            now - std::time::Duration::from_secs(r.random_range(0..365 * 86400))
        };
        let times = std::fs::FileTimes::new()
            .set_modified(age(&mut rng))
            .set_accessed(age(&mut rng));
        std::fs::File::options()
            .write(true)
            .open(&p)?
            .set_times(times)?;
    }
    Ok(())
}

pub fn main(a: &PruneArgs) -> Result<()> {
    let free = fsbench_base::units::parse_size(&a.free)
        .map_err(|e| fsbench_base::exit::usage(format!("--free {}: {e}", a.free)))?;
    if free == 0 {
        return Err(fsbench_base::exit::usage(
            "--free 0: nothing to free; give the space to free (e.g. --free 5G)",
        ));
    }
    if a.dir.is_some() {
        fsbench_base::units::parse_size(&a.file_size).map_err(|e| {
            fsbench_base::exit::usage(format!(
                "--file-size {}: {e}; give a size such as 64K or 1M",
                a.file_size
            ))
        })?;
    }
    match (&a.snapshot, &a.dir) {
        (Some(_), Some(_)) => return Err(fsbench_base::exit::usage("--dir makes a tree to prune; with a SNAPSHOT, prune its tree (--root DIR if it moved)")),
        (None, None) => return Err(fsbench_base::exit::usage("give a SNAPSHOT (from `fsbench scan DIR -o SNAPSHOT`), or --dir DIR to prune a tree made there")),
        _ => {}
    }
    if a.snapshot.is_none() && (a.root.is_some() || a.really_delete_under.is_some()) {
        return Err(fsbench_base::exit::usage("--root and --really-delete-under are for a SNAPSHOT's tree; the tree --dir makes is in fsbench's own run directory"));
    }
    if let Some(s) = &a.snapshot {
        // Refused before anything is measured, not found out after the warm-ups.
        let (recorded, _) = read_snapshot(s)?;
        let root = a.root.clone().unwrap_or(recorded);
        Confined::open(&root, a.really_delete_under.as_deref())?;
    }
    let mut m = Prune {
        a,
        free,
        snapshot: a.snapshot.clone(),
        root: None,
        rd: None,
    };
    fsbench_harness::measure::measure_and_report(&mut m, &a.m)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_engine::scan::snapshot::Timestamp;

    fn e(path: &str, size: u64, mtime: i64, atime: i64) -> Entry {
        Entry {
            path: path.as_bytes().to_vec(),
            kind: Kind::File,
            size,
            blocks: size.div_ceil(4096) * 8,
            mode: 0o644,
            mtime: Timestamp {
                sec: mtime,
                nsec: 0,
            },
            atime: Timestamp {
                sec: atime,
                nsec: 0,
            },
            ctime: Timestamp::default(),
            nlink: 1,
            uid: 0,
            gid: 0,
            hash: None,
        }
    }

    fn names(v: &[Entry]) -> Vec<String> {
        v.iter()
            .map(|e| String::from_utf8_lossy(&e.path).into_owned())
            .collect()
    }

    #[test]
    fn policies_choose_in_their_order_until_enough_is_freed() {
        let files = vec![
            e("a", 4096, 30, 1),
            e("b", 40960, 10, 3),
            e("c", 8192, 20, 2),
            e("d/.fsbench-run", 4096, 0, 0),
        ];
        assert_eq!(
            names(&choose(files.clone(), Policy::Oldest, 8192, 1)),
            ["b"]
        );
        assert_eq!(
            names(&choose(files.clone(), Policy::Oldest, 40961, 1)),
            ["b", "c"]
        );
        assert_eq!(names(&choose(files.clone(), Policy::Lru, 4096, 1)), ["a"]);
        assert_eq!(names(&choose(files.clone(), Policy::Largest, 1, 1)), ["b"]);
        assert_eq!(
            names(&choose(files.clone(), Policy::Smallest, 12288, 1)),
            ["a", "c"]
        );
        // Everything is not enough: all of it, never the marker.
        assert_eq!(choose(files.clone(), Policy::Random, 1 << 40, 7).len(), 3);
        assert_eq!(
            names(&choose(files.clone(), Policy::Random, 1 << 40, 7)),
            names(&choose(files, Policy::Random, 1 << 40, 7)),
            "reproducible from the seed"
        );
    }
}
