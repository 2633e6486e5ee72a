//! Build provenance: which source the binary was built from, recorded in every result so that
//! figures can be traced to code. The binary's build script asks git at build time and `main`
//! hands the answer over once with [`record`] (in the top crate, so that a source change
//! rebuilds only that crate); without git (a source tarball), or in a program that records
//! nothing, the commit is "unknown" and whether the tree was modified is not known.

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The binary's commit and modified flag, as its build script found them.
static PROVENANCE: OnceLock<(String, Option<bool>)> = OnceLock::new();

/// Record the binary's provenance: `commit` as `git rev-parse HEAD` gave it (or "unknown"),
/// `modified` "true", "false" or anything else for not known. The first call wins.
pub fn record(commit: &str, modified: &str) {
    let modified = match modified {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    };
    let _ = PROVENANCE.set((commit.to_string(), modified));
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct BuildInfo {
    /// The crate version (`CARGO_PKG_VERSION`).
    pub version: String,
    /// `git rev-parse HEAD` of the tree the binary was built from, or "unknown".
    pub git_commit: String,
    /// Whether `git status --porcelain` listed changes at build time; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_modified: Option<bool>,
}

impl BuildInfo {
    /// This binary's provenance.
    pub fn current() -> BuildInfo {
        let (commit, modified) = PROVENANCE
            .get()
            .cloned()
            .unwrap_or_else(|| ("unknown".to_string(), None));
        BuildInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: commit,
            git_modified: modified,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn commit_is_a_hash_or_unknown() {
        super::record("0123456789abcdef0123456789abcdef01234567", "false");
        let b = super::BuildInfo::current();
        assert_eq!(b.version, env!("CARGO_PKG_VERSION"));
        let c = &b.git_commit;
        assert!(
            c == "unknown" || (c.len() == 40 && c.chars().all(|x| x.is_ascii_hexdigit())),
            "{c}"
        );
        assert_eq!(b.git_modified.is_none(), c == "unknown");
    }
}
