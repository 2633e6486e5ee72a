//! Build provenance: which source the binary was built from, recorded in every result so that
//! figures can be traced to code. build.rs asks git at build time; without git (a source
//! tarball) the commit is "unknown" and whether the tree was modified is not known.

use serde::{Deserialize, Serialize};

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
        BuildInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: env!("FSBENCH_GIT_COMMIT").to_string(),
            git_modified: match env!("FSBENCH_GIT_MODIFIED") {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn commit_is_a_hash_or_unknown() {
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
