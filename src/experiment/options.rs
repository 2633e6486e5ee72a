//! Pass-through options of a plan (`mkfs_options`, `mount_options`) checked to be options.
//!
//! `mkfs.TYPE OPTIONS... DEVICE` formats every device named on its command line, and several
//! options name files of their own (an external journal, a prototype or root directory to
//! copy, an undo file, a bad-block list). A plan's options may therefore hold only the flags
//! of that `mkfs` known here and the values of those flags; a value never holds a path or a
//! device (no `/`, no `device=`/`name=`/`logdev=`-like sub-option), and nothing positional is
//! accepted. Flags that read or write other files are refused by name.

/// How a flag of `mkfs.TYPE` is written.
#[derive(Clone, Copy, PartialEq)]
enum Arg {
    /// A flag alone (`-q`, `--force`).
    None,
    /// A flag followed by its value (`-b 4096`, `-b4096`, `--nodesize=16k`).
    Value,
}

struct Flag {
    names: &'static [&'static str],
    arg: Arg,
}

const fn f(names: &'static [&'static str], arg: Arg) -> Flag {
    Flag { names, arg }
}

/// mke2fs(8) without -d (copies a directory in), -l (reads a file), -z (writes an undo
/// file), -c (reads the whole device for bad blocks), -S and -V (no file system made).
const EXT4: &[Flag] = &[
    f(
        &["-b", "-C", "-e", "-E", "-g", "-G", "-i", "-I", "-J", "-L"],
        Arg::Value,
    ),
    f(
        &["-m", "-M", "-N", "-o", "-O", "-r", "-t", "-T", "-U"],
        Arg::Value,
    ),
    f(&["-D", "-F", "-j", "-K", "-n", "-q", "-v"], Arg::None),
];

/// mkfs.xfs(8) without -p (a prototype file) and -c (a configuration file).
const XFS: &[Flag] = &[
    f(
        &["-b", "-d", "-i", "-l", "-m", "-n", "-r", "-s", "-L"],
        Arg::Value,
    ),
    f(&["-f", "-q", "-K", "-N"], Arg::None),
];

/// mkfs.btrfs(8) without --rootdir, --subvol, --shrink (copy a directory in) and --version.
const BTRFS: &[Flag] = &[
    f(
        &["-A", "--alloc-start", "-b", "--byte-count", "-d", "--data"],
        Arg::Value,
    ),
    f(
        &["-m", "--metadata", "-L", "--label", "-n", "--nodesize"],
        Arg::Value,
    ),
    f(
        &["-s", "--sectorsize", "-O", "--features", "-U", "--uuid"],
        Arg::Value,
    ),
    f(
        &[
            "-R",
            "--runtime-features",
            "--checksum",
            "--csum",
            "--device-uuid",
        ],
        Arg::Value,
    ),
    f(
        &[
            "-f",
            "--force",
            "-q",
            "--quiet",
            "-M",
            "--mixed",
            "-K",
            "--nodiscard",
        ],
        Arg::None,
    ),
    f(&["-v", "--verbose"], Arg::None),
];

/// Sub-options (`key=value` inside a flag's value) that name another device or file.
const NAMING: &[&str] = &["device", "name", "file", "logdev", "rtdev", "journal_path"];

fn table(fs: &str) -> Option<&'static [Flag]> {
    match fs {
        "ext4" => Some(EXT4),
        "xfs" => Some(XFS),
        "btrfs" => Some(BTRFS),
        _ => None,
    }
}

fn known(fs: &str) -> String {
    let t = table(fs).unwrap_or(&[]);
    t.iter()
        .flat_map(|f| f.names.iter().copied())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why `v` cannot be a flag's value, if it cannot.
fn bad_value(flag: &str, v: &str) -> Option<String> {
    if v.is_empty() {
        return Some(format!("{flag} needs a value"));
    }
    if v.starts_with('-') {
        return Some(format!("{flag} needs a value, not the flag {v:?}"));
    }
    if v.contains('/') || v.contains('\0') {
        return Some(format!(
            "{v:?} (the value of {flag}) looks like a path; options may not name files or devices"
        ));
    }
    for sub in v.split(',') {
        let key = sub.split('=').next().unwrap_or("").trim();
        if sub.contains('=') && NAMING.contains(&key) {
            return Some(format!(
                "{sub:?} (in the value of {flag}) names another device or file; fsbench formats only its own image"
            ));
        }
    }
    None
}

/// Check `opts` as options of `mkfs.FS`: `Err((index of the offending element, why))`.
pub fn check_mkfs(fs: &str, opts: &[String]) -> Result<(), (usize, String)> {
    let Some(t) = table(fs) else {
        return if opts.is_empty() {
            Ok(())
        } else {
            Err((0, format!("mkfs_options are not accepted for {fs}")))
        };
    };
    let lookup = |name: &str| t.iter().find(|f| f.names.contains(&name));
    let mut i = 0;
    while i < opts.len() {
        let o = opts[i].as_str();
        if !o.starts_with('-') || o == "-" || o == "--" {
            return Err((
                i,
                format!(
                    "{o:?} is not an option of mkfs.{fs}: mkfs_options hold flags and their values only (no devices, files or other arguments)"
                ),
            ));
        }
        let (name, attached) = if o.starts_with("--") {
            match o.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (o, None),
            }
        } else {
            let (n, rest) = o.split_at(2.min(o.len()));
            (n, (!rest.is_empty()).then_some(rest))
        };
        let Some(flag) = lookup(name) else {
            return Err((
                i,
                format!(
                    "{o:?}: mkfs.{fs} option {name} is not one fsbench passes (it accepts: {}; one flag per element)",
                    known(fs)
                ),
            ));
        };
        match (flag.arg, attached) {
            (Arg::None, Some(_)) => {
                return Err((
                    i,
                    format!("{o:?}: {name} takes no value (write one flag per element)"),
                ))
            }
            (Arg::None, None) => {}
            (Arg::Value, Some(v)) => {
                if let Some(why) = bad_value(name, v) {
                    return Err((i, why));
                }
            }
            (Arg::Value, None) => {
                i += 1;
                let v = opts.get(i).map(String::as_str).unwrap_or("");
                if let Some(why) = bad_value(name, v) {
                    return Err((i.min(opts.len() - 1), why));
                }
            }
        }
        i += 1;
    }
    Ok(())
}

/// `mount -o` options that do something else than set up this file system's mount.
const MOUNT_REFUSED: &[&str] = &[
    "bind",
    "rbind",
    "move",
    "remount",
    "loop",
    "offset",
    "sizelimit",
    "encryption",
    "helper",
];

/// Check a `mount_options` string: comma-separated mount options, none naming a file or
/// device, none turning the mount into another operation.
pub fn check_mount(opts: &str) -> Result<(), String> {
    for o in opts.split(',') {
        let key = o.split('=').next().unwrap_or("");
        if o.contains('/') || o.contains('\0') || o.chars().any(char::is_whitespace) {
            return Err(format!(
                "mount option {o:?} names a path or holds spaces; mount_options may not name files or devices"
            ));
        }
        let lower = key.to_ascii_lowercase();
        if MOUNT_REFUSED.contains(&lower.as_str())
            || lower.starts_with("x-")
            || NAMING.contains(&lower.as_str())
        {
            return Err(format!(
                "mount option {o:?} is not accepted: fsbench mounts only the file system it made"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_and_values_pass() {
        assert!(check_mkfs(
            "ext4",
            &v(&[
                "-E",
                "lazy_itable_init=0",
                "-b",
                "4096",
                "-O",
                "^has_journal"
            ])
        )
        .is_ok());
        assert!(check_mkfs("ext4", &v(&["-b4096", "-j", "-L", "data"])).is_ok());
        assert!(check_mkfs("xfs", &v(&["-m", "crc=1,reflink=1", "-d", "agcount=4"])).is_ok());
        assert!(check_mkfs("btrfs", &v(&["--nodesize=16k", "-m", "single", "-f"])).is_ok());
        assert!(check_mkfs("btrfs", &[]).is_ok());
    }

    #[test]
    fn devices_paths_and_positionals_are_refused() {
        let e = |fs: &str, a: &[&str]| check_mkfs(fs, &v(a)).unwrap_err();
        assert_eq!(e("btrfs", &["/some/other.img"]).0, 0);
        assert_eq!(e("btrfs", &["-f", "other.img"]).0, 1);
        assert_eq!(e("btrfs", &["-L", "x", "/dev/sdb"]).0, 2);
        assert_eq!(e("btrfs", &["--rootdir", "/etc"]).0, 0);
        assert_eq!(e("ext4", &["-J", "device=/dev/sdb"]).0, 1);
        assert!(e("ext4", &["-J", "device=LABEL=x"])
            .1
            .contains("names another"));
        assert_eq!(e("ext4", &["-d", "/home"]).0, 0);
        assert_eq!(e("ext4", &["-z", "undo"]).0, 0);
        assert_eq!(e("xfs", &["-l", "logdev=sdb"]).0, 1);
        assert_eq!(e("xfs", &["-d", "file,name=x.img"]).0, 1);
        assert_eq!(e("ext4", &["-b"]).0, 0);
        assert_eq!(e("ext4", &["-qF"]).0, 0);
        assert_eq!(e("ext4", &["-L", "-F"]).0, 1);
    }

    #[test]
    fn mount_options_are_options() {
        assert!(check_mount("noatime,data=ordered,commit=30").is_ok());
        assert!(check_mount("bind").is_err());
        assert!(check_mount("noatime,loop=/dev/loop9").is_err());
        assert!(check_mount("X-mount.mkdir").is_err());
        assert!(check_mount("logdev=/dev/sdb").is_err());
    }
}
