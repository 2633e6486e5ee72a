//! What an aging leaves in its directory for later: the state a continued aging starts from
//! (`.fsbench-age.json`: the operation clock, the seed, the profile, the length of a day),
//! and the live files with the clock of each one's last write (`.fsbench-age-files`), from
//! the planner's own record of what it did. The hot-file benchmark reads the second to find
//! the files the last days of aging changed; a continued aging reads it back so that those
//! clocks survive.

use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

use serde::{Deserialize, Serialize};

/// The state file, in the aged directory.
pub const STATE_FILE: &str = ".fsbench-age.json";
/// The live files and their last writes, in the aged directory.
pub const FILES_FILE: &str = ".fsbench-age-files";
/// The files list as an input read back: at most 1 GiB (about 25 million files).
const FILES_INPUT: fsbench_base::input::Kind = fsbench_base::input::Kind {
    what: "aging's record of live files",
    max: 1 << 30,
};

/// Operations in a simulated day by default: the published aging workload ran about 1.3
/// million operations over seven months (213 days), 6,100 a day.
pub const DAY_OPS: u64 = 6000;

/// State kept in the aged directory so that aging can continue later.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct State {
    /// The operation clock at the end.
    pub clock: u64,
    pub seed: u64,
    pub profile: String,
    /// Operations per simulated day (0 in a state written before days were counted).
    #[serde(default)]
    pub day_ops: u64,
}

fn cname(n: &str) -> CString {
    CString::new(n).expect("no NUL in fsbench's names")
}

/// The state of the aged directory `dir`; the default where there is none (or it is not
/// one fsbench can read).
pub fn read_state(dir: RawFd) -> State {
    read_own(dir, STATE_FILE, fsbench_base::input::STATE)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// A file aging wrote directly in the aged directory, read whole within `kind`'s bound
/// (opened without following a link and without waiting on a FIFO).
fn read_own(dir: RawFd, name: &str, kind: fsbench_base::input::Kind) -> io::Result<Vec<u8>> {
    let f = fsbench_base::beneath::open_file(dir, &cname(name), libc::O_RDONLY | libc::O_NONBLOCK)?;
    fsbench_base::input::read_open(&f.into(), kind)
}

/// Write the state (through the owned-tree layer).
pub fn write_state(dir: RawFd, st: &State) -> io::Result<()> {
    let text = serde_json::to_vec_pretty(st).map_err(io::Error::other)?;
    fsbench_base::owned::put(dir, &cname(STATE_FILE), &text)
}

/// One live file: its path below the aged directory and the clock of its last write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveFile {
    pub path: String,
    pub modified: u64,
}

/// Write the live files, one a line: `CLOCK PATH`.
pub fn write_files(dir: RawFd, files: &[LiveFile]) -> io::Result<()> {
    let mut text =
        String::from("# fsbench age: each live file's last write (operation clock) and its path\n");
    for f in files {
        text.push_str(&format!("{} {}\n", f.modified, f.path));
    }
    fsbench_base::owned::put(dir, &cname(FILES_FILE), text.as_bytes())
}

/// The live files an earlier aging recorded; `Ok(None)` where it recorded none.
pub fn read_files(dir: RawFd) -> io::Result<Option<Vec<LiveFile>>> {
    let bytes = match read_own(dir, FILES_FILE, FILES_INPUT) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let parsed = line
            .split_once(' ')
            .and_then(|(c, p)| Some((c.parse::<u64>().ok()?, p)));
        let Some((modified, path)) = parsed else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{FILES_FILE} line {}: expected `CLOCK PATH`", i + 1),
            ));
        };
        out.push(LiveFile {
            path: path.to_string(),
            modified,
        });
    }
    Ok(Some(out))
}

/// The recorded last writes by path, for a continued aging.
pub fn modified_by_path(files: Option<Vec<LiveFile>>) -> HashMap<String, u64> {
    files
        .unwrap_or_default()
        .into_iter()
        .map(|f| (f.path, f.modified))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn files_and_state_read_back() {
        let d = std::env::temp_dir().join(format!("fsbench-age-record-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let fd = std::fs::File::open(&d).unwrap();
        assert_eq!(read_files(fd.as_raw_fd()).unwrap(), None);
        let files = vec![
            LiveFile {
                path: "d1/f3".into(),
                modified: 17,
            },
            LiveFile {
                path: "f9".into(),
                modified: 9,
            },
        ];
        write_files(fd.as_raw_fd(), &files).unwrap();
        assert_eq!(read_files(fd.as_raw_fd()).unwrap(), Some(files.clone()));
        assert_eq!(modified_by_path(Some(files))["d1/f3"], 17);
        let st = State {
            clock: 5,
            seed: 2,
            profile: "agrawal".into(),
            day_ops: 100,
        };
        write_state(fd.as_raw_fd(), &st).unwrap();
        assert_eq!(read_state(fd.as_raw_fd()).day_ops, 100);
        std::fs::write(d.join(FILES_FILE), "12\n").unwrap();
        let e = read_files(fd.as_raw_fd()).unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
