//! What every application benchmark does before and around its run: validate what it asks of
//! the machine before creating anything, remove its run directory on every error path, and
//! start its threads so that one that cannot be started stops the others instead of leaving
//! them waiting for it.

use anyhow::{bail, Result};
use fsbench_base::limits::Machine;
use fsbench_engine::engine::rundir::RunDir;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

/// Removes a run directory when dropped, unless it is kept or handed back with
/// [`RunDirGuard::finish`]: an error or a panic between creating the directory and the end of
/// the run leaves nothing behind.
pub struct RunDirGuard {
    rd: Option<RunDir>,
}

impl RunDirGuard {
    pub fn new(rd: RunDir) -> RunDirGuard {
        RunDirGuard { rd: Some(rd) }
    }
    pub fn path(&self) -> &Path {
        &self.rundir().path
    }
    pub fn rundir(&self) -> &RunDir {
        self.rd.as_ref().expect("held until finish")
    }
    /// Close the run directory's descriptors for a remount; [`RunDirGuard::reopen`] takes
    /// them again. Returns what `reopen` checks against.
    pub fn release(&mut self) -> (u64, u64) {
        let rd = self.rd.as_mut().expect("held until finish");
        let id = rd.id();
        rd.release();
        id
    }
    pub fn reopen(&mut self, id: (u64, u64)) -> Result<()> {
        let rd = self.rd.as_mut().expect("held until finish");
        rd.reopen(id)?;
        Ok(())
    }
    /// The run is over: remove the directory now (reporting failure) unless `keep`.
    pub fn finish(mut self, keep: bool) -> Result<()> {
        let rd = self.rd.take().expect("held until finish");
        if !keep {
            rd.remove()?;
        }
        Ok(())
    }
}

impl Drop for RunDirGuard {
    fn drop(&mut self) {
        if let Some(rd) = self.rd.take() {
            if let Err(e) = rd.remove() {
                fsbench_base::exit::left_behind(e.to_string());
            }
        }
    }
}

/// The directory a benchmark creates its run directory in: it must exist and be a directory.
pub fn target_dir(dir: Option<&Path>) -> Result<PathBuf> {
    let d = dir
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    match std::fs::metadata(&d) {
        Ok(m) if m.is_dir() => Ok(d.canonicalize()?),
        Ok(m) => bail!(
            "target directory {} is not a directory (it is {}); give --dir a directory",
            d.display(),
            fsbench_base::input::file_kind(&m)
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("target directory {} does not exist", d.display())
        }
        Err(e) => bail!("target directory {}: {e}", d.display()),
    }
}

/// A directory a command is told it may delete beneath (`prune --really-delete-under
/// DIR`): an existing directory, never `/` nor a directory of the operating system (where
/// a mistaken snapshot would delete installed software, configuration or state). Its
/// resolved path.
pub fn deletable_under(dir: &Path, flag: &str) -> Result<PathBuf> {
    fsbench_base::input::check_dir(dir)
        .map_err(|e| anyhow::anyhow!("{flag} {}: {e}", dir.display()))?;
    let real = dir
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("{flag} {}: {e}", dir.display()))?;
    if let Some(what) = fsbench_engine::engine::rundir::system_dir(&real) {
        bail!(
            "{flag} {}: {} is a system directory ({what}); fsbench deletes nothing there. Name the directory of the tree to prune, one of your own",
            dir.display(),
            real.display()
        );
    }
    Ok(real)
}

/// Refuse `n` threads (named by the option that asked for them) beyond what the machine can
/// start or hold, `per_thread` bytes each.
pub fn check_threads(n: u64, per_thread: u64, what: &str) -> Result<()> {
    Machine::probe()
        .check_threads(n, per_thread, what)
        .map_err(anyhow::Error::msg)
}

/// Threads wait here until every one of them has been started; if one cannot be, they are
/// all told to return at once.
#[derive(Default)]
pub struct StartGate {
    state: Mutex<Option<bool>>,
    cv: Condvar,
}

impl StartGate {
    /// Wait for the verdict: true to run, false to return without running.
    pub fn wait(&self) -> bool {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(go) = *g {
                return go;
            }
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
    pub fn open(&self, go: bool) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(go);
        self.cv.notify_all();
    }
}

/// Run `f(0)` .. `f(n - 1)` on `n` threads named by `name` that start together, once all of
/// them exist: if one cannot be started, none runs and the error says which. `what` names
/// one thread in the errors ("a build job panicked").
pub fn run_gated<T: Send>(
    n: u32,
    name: impl Fn(u32) -> String,
    what: &str,
    f: impl Fn(u32) -> T + Sync,
) -> anyhow::Result<Vec<T>> {
    let gate = StartGate::default();
    std::thread::scope(|sc| {
        let mut hs = Vec::new();
        for i in 0..n {
            let (gate, f) = (&gate, &f);
            let h =
                fsbench_base::limits::spawn_scoped(sc, name(i), move || gate.wait().then(|| f(i)));
            match h {
                Ok(h) => hs.push(h),
                Err(e) => {
                    gate.open(false);
                    return Err(anyhow::anyhow!("{e}"));
                }
            }
        }
        gate.open(true);
        hs.into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| anyhow::anyhow!("{what} panicked"))?
                    .ok_or_else(|| anyhow::anyhow!("{what} did not run"))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_dir_names_what_is_wrong() {
        let e = target_dir(Some(Path::new("/etc/passwd"))).unwrap_err();
        assert!(e.to_string().contains("is not a directory"), "{e}");
        let e = target_dir(Some(Path::new("/nonexistent/x"))).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        assert!(target_dir(Some(Path::new("/tmp"))).is_ok());
    }

    #[test]
    fn gate_releases_waiters_either_way() {
        let g = StartGate::default();
        std::thread::scope(|s| {
            let h = s.spawn(|| g.wait());
            g.open(false);
            assert!(!h.join().unwrap());
        });
    }
}
