//! Aging profiles: the target population an aged file system should reach.
//!
//! A profile holds three weighted distributions, after Geriatrix:
//! - **size**: representative file sizes in bytes and the share of files of
//!   each (Geriatrix creates every file of a bucket with exactly that size);
//! - **dirs**: per directory depth, the weight of files and of subdirectories
//!   at that depth;
//! - **age**: file ages and their weights; `relative` ages (the published
//!   studies) are only meaningful as ratios, scaled by the length of a run;
//!   `seconds` ages come from a scan snapshot's mtimes.
//!
//! Built-in profiles are the published studies' numbers (as shipped with
//! Geriatrix) converted by `profiles/generate.sh` into one small text file per
//! study, embedded with `include_str!`. The format, line by line (`#` starts a
//! comment, blank lines are ignored):
//!
//! ```text
//! profile NAME
//! source FREE TEXT
//! age-unit relative|seconds
//! size BYTES:WEIGHT ...              ascending sizes
//! dirs DEPTH:FILES:SUBDIRS ...       ascending depths
//! age AGE:WEIGHT ...                 ascending ages
//! ```
//!
//! [`Profile::to_text`] writes the same format, so a profile derived from a
//! snapshot can be saved, edited and loaded again with [`Profile::parse`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;

use serde::Serialize;

use fsbench_engine::scan::snapshot::{Kind, SnapshotError, SnapshotStream};
use fsbench_engine::scan::summary::log2_bucket;

/// The built-in profiles: (name, text).
const BUILTIN: &[(&str, &str)] = &[
    ("agrawal", include_str!("profiles/agrawal.txt")),
    ("dabre", include_str!("profiles/dabre.txt")),
    ("douceur", include_str!("profiles/douceur.txt")),
    ("grundman", include_str!("profiles/grundman.txt")),
    ("meyer", include_str!("profiles/meyer.txt")),
    ("pramod", include_str!("profiles/pramod.txt")),
    ("wang_lanl", include_str!("profiles/wang_lanl.txt")),
    ("wang_os", include_str!("profiles/wang_os.txt")),
];

/// Errors loading a profile.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("unknown aging profile \"{name}\" (built in: {})", Profile::names().join(", "))]
    Unknown { name: String },
    #[error("profile line {line}: {msg}")]
    Parse { line: usize, msg: String },
    #[error("profile {name}: {msg}")]
    Invalid { name: String, msg: String },
    #[error("reading snapshot: {0}")]
    Snapshot(#[from] SnapshotError),
}

/// Unit of the age distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AgeUnit {
    /// Dimensionless; only ratios between buckets matter.
    Relative,
    /// Seconds before the snapshot was taken.
    Seconds,
}

/// One size bucket.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SizeBucket {
    pub bytes: u64,
    pub weight: u64,
}

/// One depth of the directory distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DepthBucket {
    pub depth: u32,
    /// Weight of files at this depth.
    pub files: u64,
    /// Weight of subdirectories at this depth.
    pub subdirs: u64,
}

/// One age bucket.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AgeBucket {
    pub age: f64,
    pub weight: u64,
}

/// A target population for aging.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    pub name: String,
    pub source: String,
    pub age_unit: AgeUnit,
    pub sizes: Vec<SizeBucket>,
    pub dirs: Vec<DepthBucket>,
    pub ages: Vec<AgeBucket>,
}

fn fractions(weights: impl Iterator<Item = u64> + Clone) -> Vec<f64> {
    let total: u64 = weights.clone().sum();
    weights
        .map(|w| {
            if total == 0 {
                0.0
            } else {
                w as f64 / total as f64
            }
        })
        .collect()
}

impl Profile {
    /// Names of the built-in profiles.
    pub fn names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(n, _)| *n).collect()
    }

    /// A built-in profile by name.
    pub fn builtin(name: &str) -> Result<Profile, ProfileError> {
        let (_, text) = BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| ProfileError::Unknown { name: name.into() })?;
        Profile::parse(text)
    }

    /// Parse a profile in fsbench's text format (see the module docs).
    pub fn parse(text: &str) -> Result<Profile, ProfileError> {
        let mut p = Profile {
            name: String::new(),
            source: String::new(),
            age_unit: AgeUnit::Relative,
            sizes: Vec::new(),
            dirs: Vec::new(),
            ages: Vec::new(),
        };
        let mut seen = [false; 3];
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let err = |msg: String| ProfileError::Parse { line: line_no, msg };
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let (key, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let rest = rest.trim();
            let fields = |n: usize| -> Result<Vec<Vec<&str>>, ProfileError> {
                rest.split_whitespace()
                    .map(|t| {
                        let f: Vec<&str> = t.split(':').collect();
                        if f.len() == n {
                            Ok(f)
                        } else {
                            Err(err(format!(
                                "expected {n} ':'-separated numbers, got \"{t}\""
                            )))
                        }
                    })
                    .collect()
            };
            let int = |s: &str| -> Result<u64, ProfileError> {
                s.parse()
                    .map_err(|_| err(format!("\"{s}\" is not a non-negative integer")))
            };
            match key {
                "profile" => p.name = rest.to_string(),
                "source" => p.source = rest.to_string(),
                "age-unit" => {
                    p.age_unit = match rest {
                        "relative" => AgeUnit::Relative,
                        "seconds" => AgeUnit::Seconds,
                        _ => return Err(err(format!("unknown age unit \"{rest}\""))),
                    }
                }
                "size" => {
                    seen[0] = true;
                    for f in fields(2)? {
                        p.sizes.push(SizeBucket {
                            bytes: int(f[0])?,
                            weight: int(f[1])?,
                        });
                    }
                }
                "dirs" => {
                    seen[1] = true;
                    for f in fields(3)? {
                        let depth = int(f[0])?;
                        p.dirs.push(DepthBucket {
                            depth: u32::try_from(depth)
                                .map_err(|_| err(format!("depth {depth} too large")))?,
                            files: int(f[1])?,
                            subdirs: int(f[2])?,
                        });
                    }
                }
                "age" => {
                    seen[2] = true;
                    for f in fields(2)? {
                        let age: f64 = f[0]
                            .parse()
                            .ok()
                            .filter(|a: &f64| a.is_finite() && *a >= 0.0)
                            .ok_or_else(|| err(format!("\"{}\" is not an age", f[0])))?;
                        p.ages.push(AgeBucket {
                            age,
                            weight: int(f[1])?,
                        });
                    }
                }
                _ => return Err(err(format!("unknown key \"{key}\""))),
            }
        }
        for (s, what) in seen.iter().zip(["size", "dirs", "age"]) {
            if !s {
                return Err(ProfileError::Parse {
                    line: text.lines().count(),
                    msg: format!("missing \"{what}\" line"),
                });
            }
        }
        p.validate()?;
        Ok(p)
    }

    fn validate(&self) -> Result<(), ProfileError> {
        let bad = |msg: &str| ProfileError::Invalid {
            name: self.name.clone(),
            msg: msg.into(),
        };
        if self.name.is_empty() {
            return Err(bad("no \"profile NAME\" line"));
        }
        if self.sizes.iter().map(|b| b.weight).sum::<u64>() == 0 {
            return Err(bad("size weights are all zero"));
        }
        if self.dirs.iter().map(|b| b.files).sum::<u64>() == 0 {
            return Err(bad("no depth has files"));
        }
        if !self.sizes.windows(2).all(|w| w[0].bytes < w[1].bytes) {
            return Err(bad("sizes must be strictly ascending"));
        }
        if !self.dirs.windows(2).all(|w| w[0].depth < w[1].depth) {
            return Err(bad("depths must be strictly ascending"));
        }
        if !self.ages.windows(2).all(|w| w[0].age < w[1].age) {
            return Err(bad("ages must be strictly ascending"));
        }
        Ok(())
    }

    /// Share of files in each size bucket (sums to 1).
    pub fn size_fractions(&self) -> Vec<f64> {
        fractions(self.sizes.iter().map(|b| b.weight))
    }

    /// Share of files at each depth (sums to 1).
    pub fn depth_file_fractions(&self) -> Vec<f64> {
        fractions(self.dirs.iter().map(|b| b.files))
    }

    /// Share of subdirectories at each depth (all zero if none).
    pub fn depth_subdir_fractions(&self) -> Vec<f64> {
        fractions(self.dirs.iter().map(|b| b.subdirs))
    }

    /// Share of files in each age bucket (all zero if there are none).
    pub fn age_fractions(&self) -> Vec<f64> {
        fractions(self.ages.iter().map(|b| b.weight))
    }

    /// Expected file size in bytes under the size distribution: with a
    /// target fullness it tells how many files an aged file system holds.
    pub fn mean_file_size(&self) -> f64 {
        self.sizes
            .iter()
            .zip(self.size_fractions())
            .map(|(b, f)| b.bytes as f64 * f)
            .sum()
    }

    /// Write the profile in the format [`Profile::parse`] reads.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "profile {}", self.name);
        if !self.source.is_empty() {
            let _ = writeln!(s, "source {}", self.source.replace(['\n', '#'], " "));
        }
        let unit = match self.age_unit {
            AgeUnit::Relative => "relative",
            AgeUnit::Seconds => "seconds",
        };
        let _ = writeln!(s, "age-unit {unit}");
        let join = |v: Vec<String>| v.join(" ");
        let _ = writeln!(
            s,
            "size {}",
            join(
                self.sizes
                    .iter()
                    .map(|b| format!("{}:{}", b.bytes, b.weight))
                    .collect()
            )
        );
        let _ = writeln!(
            s,
            "dirs {}",
            join(
                self.dirs
                    .iter()
                    .map(|b| format!("{}:{}:{}", b.depth, b.files, b.subdirs))
                    .collect()
            )
        );
        let _ = writeln!(
            s,
            "age {}",
            join(
                self.ages
                    .iter()
                    .map(|b| format!("{}:{}", b.age, b.weight))
                    .collect()
            )
        );
        s
    }

    /// Target distributions of a real tree, from a `scan` snapshot.
    ///
    /// - size: regular files in log2 buckets, each represented by its upper
    ///   bound (a power of two; empty files by 0), as in the published
    ///   profiles whose sizes are powers of two;
    /// - dirs: at depth d (0 = directly in the scanned root) the number of
    ///   regular files and of directories;
    /// - age: seconds between a file's mtime and the snapshot's creation, in
    ///   log2 buckets represented by their upper bound (files "from the
    ///   future" count as age 0).
    pub fn from_snapshot<R: BufRead>(
        name: &str,
        stream: SnapshotStream<R>,
    ) -> Result<Profile, ProfileError> {
        let created = stream.header().created_unix;
        let source = format!("scan snapshot of {}", stream.header().root);
        let mut sizes: BTreeMap<usize, u64> = BTreeMap::new();
        let mut dirs: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        let mut ages: BTreeMap<usize, u64> = BTreeMap::new();
        for e in stream {
            let e = e?;
            match e.kind {
                Kind::File => {
                    *sizes.entry(log2_bucket(e.size)).or_default() += 1;
                    dirs.entry(e.depth()).or_default().0 += 1;
                    let age = created.saturating_sub(e.mtime.sec).max(0) as u64;
                    *ages.entry(log2_bucket(age)).or_default() += 1;
                }
                Kind::Dir => dirs.entry(e.depth()).or_default().1 += 1,
                _ => {}
            }
        }
        // Upper bound of log2 bucket b ≥ 1 is 2^b; cap at 2^63 to stay in u64.
        let upper = |b: usize| if b == 0 { 0 } else { 1u64 << b.min(63) };
        let p = Profile {
            name: name.to_string(),
            source,
            age_unit: AgeUnit::Seconds,
            sizes: sizes
                .into_iter()
                .map(|(b, w)| SizeBucket {
                    bytes: upper(b),
                    weight: w,
                })
                .collect(),
            dirs: dirs
                .into_iter()
                .map(|(depth, (files, subdirs))| DepthBucket {
                    depth,
                    files,
                    subdirs,
                })
                .collect(),
            ages: ages
                .into_iter()
                .map(|(b, w)| AgeBucket {
                    age: upper(b) as f64,
                    weight: w,
                })
                .collect(),
        };
        if p.sizes.is_empty() {
            return Err(ProfileError::Invalid {
                name: name.into(),
                msg: "the snapshot holds no regular files".into(),
            });
        }
        p.validate()?;
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_engine::scan::snapshot::{
        write_snapshot, Entry, Snapshot, SnapshotHeader, Timestamp,
    };

    #[test]
    fn all_builtins_parse_with_their_row_counts() {
        // Row counts from the first line of each source file.
        let want = [
            ("agrawal", 11, 15, 10),
            ("dabre", 22, 14, 14),
            ("douceur", 25, 16, 20),
            ("grundman", 23, 26, 9),
            ("meyer", 29, 21, 24),
            ("pramod", 26, 37, 16),
            ("wang_lanl", 11, 1, 12),
            ("wang_os", 15, 1, 10),
        ];
        assert_eq!(Profile::names().len(), want.len());
        for (name, s, d, a) in want {
            let p = Profile::builtin(name).unwrap();
            assert_eq!(p.name, name);
            assert_eq!(
                (p.sizes.len(), p.dirs.len(), p.ages.len()),
                (s, d, a),
                "{name}"
            );
            assert_eq!(p.age_unit, AgeUnit::Relative);
            let total: f64 = p.size_fractions().iter().sum();
            assert!((total - 1.0).abs() < 1e-9);
            assert_eq!(Profile::parse(&p.to_text()).unwrap().sizes, p.sizes);
        }
    }

    #[test]
    fn agrawal_numbers() {
        let p = Profile::builtin("agrawal").unwrap();
        assert_eq!(
            p.sizes[0],
            SizeBucket {
                bytes: 8,
                weight: 1
            }
        );
        assert_eq!(
            p.sizes[4],
            SizeBucket {
                bytes: 2048,
                weight: 50
            }
        );
        assert_eq!(
            p.dirs[2],
            DepthBucket {
                depth: 3,
                files: 14,
                subdirs: 13
            }
        );
        assert_eq!(p.ages[0].age, 10.74);
        assert_eq!(p.ages[9].age, 122640.0);
        assert!(p.source.contains("FAST 2007"));
        // Σ bytes·weight / Σ weight = 2,062,640 / 230
        let want = (8
            + 32 * 7
            + 128 * 16
            + 512 * 40
            + 2048 * 50
            + 8192 * 46
            + 32768 * 35
            + 131072 * 20
            + 524288 * 10
            + 2097152 * 4
            + 8388608) as f64
            / 230.0;
        assert!((p.mean_file_size() - want).abs() < 1e-6);
    }

    #[test]
    fn unknown_and_malformed_profiles() {
        let e = Profile::builtin("nope").unwrap_err().to_string();
        assert!(e.contains("agrawal") && e.contains("nope"), "{e}");
        let e = Profile::parse("profile x\nsize 1:2:3\ndirs 0:1:0\nage 1:1\n").unwrap_err();
        assert!(matches!(e, ProfileError::Parse { line: 2, .. }), "{e}");
        let e = Profile::parse("profile x\nsize 8:1 4:1\ndirs 0:1:0\nage 1:1\n").unwrap_err();
        assert!(e.to_string().contains("ascending"), "{e}");
        let e = Profile::parse("profile x\nsize 8:1\nage 1:1\n").unwrap_err();
        assert!(e.to_string().contains("dirs"), "{e}");
        let ok = Profile::parse("# c\nprofile x # name\n\nsize 8:1\ndirs 0:1:0\nage 1.5:1\n");
        assert_eq!(ok.unwrap().ages[0].age, 1.5);
    }

    fn e(path: &str, kind: Kind, size: u64, mtime: i64) -> Entry {
        let t = Timestamp {
            sec: mtime,
            nsec: 0,
        };
        Entry {
            path: path.as_bytes().to_vec(),
            kind,
            size,
            blocks: 0,
            mode: 0o644,
            mtime: t,
            atime: t,
            ctime: t,
            nlink: 1,
            uid: 0,
            gid: 0,
            hash: None,
        }
    }

    #[test]
    fn from_snapshot_buckets_sizes_depths_and_ages() {
        let now = 1_000_000;
        let entries = vec![
            e("a", Kind::File, 0, now),
            e("b", Kind::File, 3000, now - 100),
            e("d", Kind::Dir, 4096, now),
            e("d/c", Kind::File, 4096, now - 1),
            e("d/e", Kind::File, 4000, now + 50),
            e("d/s", Kind::Symlink, 10, now),
            e("d/f", Kind::Dir, 4096, now),
        ];
        let header = SnapshotHeader {
            root: "/r".into(),
            created_unix: now,
            cross_mounts: false,
            tool_version: "t".into(),
            hash: None,
        };
        let mut buf = Vec::new();
        write_snapshot(&mut buf, &header, entries).unwrap();
        let p = Profile::from_snapshot("mine", Snapshot::read_stream(&buf[..]).unwrap()).unwrap();
        assert_eq!(p.age_unit, AgeUnit::Seconds);
        assert_eq!(
            p.sizes,
            vec![
                SizeBucket {
                    bytes: 0,
                    weight: 1
                },
                SizeBucket {
                    bytes: 4096,
                    weight: 2
                },
                SizeBucket {
                    bytes: 8192,
                    weight: 1
                },
            ]
        );
        assert_eq!(
            p.dirs,
            vec![
                DepthBucket {
                    depth: 0,
                    files: 2,
                    subdirs: 1
                },
                DepthBucket {
                    depth: 1,
                    files: 2,
                    subdirs: 1
                },
            ]
        );
        // Ages 0, 100, 1, 0 (future clamped) seconds.
        assert_eq!(
            p.ages,
            vec![
                AgeBucket {
                    age: 0.0,
                    weight: 2
                },
                AgeBucket {
                    age: 2.0,
                    weight: 1
                },
                AgeBucket {
                    age: 128.0,
                    weight: 1
                },
            ]
        );
        let back = Profile::parse(&p.to_text()).unwrap();
        assert_eq!(back, p);
    }
}
