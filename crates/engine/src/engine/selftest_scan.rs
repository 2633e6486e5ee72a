//! `fsbench selftest scan`: how fast `fsbench scan` walks a tree against
//! `find DIR -printf '%s %p\n'` (one `fstatat` per entry, one thread), in alternating rounds
//! over the same generated tree, warm (one unmeasured pass of each first) or cold (caches
//! dropped before every round; root only).

use super::rundir::RunDir;
use super::selftest::{cname, median};
use fsbench_base::beneath;
use fsbench_base::walk::WalkOptions;
use std::fmt::Write;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Entries per directory of the generated tree.
const WIDTH: u64 = 100;

/// `entries` empty files in directories of `WIDTH`, ten directories to a parent.
fn make_tree(rd: &RunDir, entries: u64) -> anyhow::Result<()> {
    let top = cname("tree");
    fsbench_base::owned::mkdir(rd.fd(), &top, 0o755)?;
    let top_fd = beneath::open_dir(rd.fd(), &top)?;
    let dirs = entries.div_ceil(WIDTH);
    let mut made = 0;
    for d in 0..dirs {
        fsbench_base::cancel::check()?;
        let parent = cname(&format!("p{:06}", d / 10));
        if d % 10 == 0 {
            fsbench_base::owned::mkdir(top_fd.as_raw_fd(), &parent, 0o755)?;
        }
        let pfd = beneath::open_dir(top_fd.as_raw_fd(), &parent)?;
        let dn = cname(&format!("d{d:06}"));
        fsbench_base::owned::mkdir(pfd.as_raw_fd(), &dn, 0o755)?;
        let dfd = beneath::open_dir(pfd.as_raw_fd(), &dn)?;
        for f in 0..WIDTH.min(entries - made) {
            let name = cname(&format!("file{f:04}.dat"));
            fsbench_base::owned::open_write(
                dfd.as_raw_fd(),
                &name,
                fsbench_base::owned::Open::New,
                libc::O_WRONLY,
            )?;
            made += 1;
        }
    }
    Ok(())
}

fn time_scan(root: &Path, opts: &WalkOptions) -> anyhow::Result<(f64, u64)> {
    let t0 = Instant::now();
    let s = crate::scan::scan(root, None, opts, 10, None)?;
    Ok((t0.elapsed().as_secs_f64(), s.entries))
}

fn time_find(root: &Path) -> anyhow::Result<f64> {
    let t0 = Instant::now();
    let st = fsbench_base::created::status(
        Command::new("find")
            .arg(root)
            .args(["-printf", "%s %p\\n"])
            .stdout(Stdio::null()),
    )
    .map_err(|e| anyhow::anyhow!("cannot run find: {e}"))?;
    fsbench_base::cancel::check()?;
    anyhow::ensure!(st.success(), "find failed: {st}");
    Ok(t0.elapsed().as_secs_f64())
}

/// Run both in alternating rounds and describe the ratio (find's time over scan's).
/// `walkers`: the scan's worker threads (`scan -j`; `None` for its default).
pub fn scan(
    dir: &Path,
    entries: u64,
    rounds: u32,
    cold: bool,
    walkers: Option<usize>,
) -> anyhow::Result<String> {
    let mut opts = WalkOptions::default();
    if let Some(w) = walkers {
        opts.threads = w.max(1);
    }
    if cold && !super::is_root() {
        anyhow::bail!("--cold drops the kernel's caches before every round: run as root");
    }
    let rd = RunDir::create(dir, "selftest-scan", false)?;
    let result = (|| -> anyhow::Result<String> {
        make_tree(&rd, entries)?;
        let root = rd.path.join("tree");
        if !cold {
            time_scan(&root, &opts)?;
            time_find(&root)?;
        }
        let (mut s, mut f, mut seen) = (Vec::new(), Vec::new(), 0);
        for _ in 0..rounds {
            fsbench_base::cancel::check()?;
            if cold {
                super::drop_caches()?;
            }
            let (t, n) = time_scan(&root, &opts)?;
            s.push(t);
            seen = n;
            if cold {
                super::drop_caches()?;
            }
            fsbench_base::cancel::check()?;
            f.push(time_find(&root)?);
        }
        let (ms, mf) = (median(s), median(f));
        let mut out = String::new();
        let _ = writeln!(
            out,
            "walk of {seen} entries (files in directories of {WIDTH}) on {} ({}), {}, {rounds} rounds alternating",
            dir.display(),
            fsbench_results::stats::host::mount_of(dir).map(|m| m.1).unwrap_or_default(),
            if cold { "caches dropped before each" } else { "warm" }
        );
        let _ = writeln!(
            out,
            "  fsbench scan ({} workers): {:.3} s ({:.0} entries/s)",
            opts.threads,
            ms,
            seen as f64 / ms
        );
        let _ = writeln!(
            out,
            "  find -printf '%s %p\\n':    {:.3} s ({:.0} entries/s)",
            mf,
            seen as f64 / mf
        );
        let _ = writeln!(out, "  scan is {:.2}x find", mf / ms);
        Ok(out)
    })();
    if let Err(e) = rd.remove() {
        fsbench_base::exit::left_behind(e.to_string());
    }
    result
}
