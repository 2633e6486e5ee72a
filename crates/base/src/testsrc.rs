//! The workspace's Rust sources, for the tests that hold every crate to a rule about its code
//! (no panicking print, no removal outside the owned-tree layer).

use std::path::{Path, PathBuf};

/// Every `.rs` file under the workspace's `src/` and `crates/*/src/`, each with its crate's
/// `src` directory (paths are reported relative to it).
pub fn rust_files() -> Vec<(PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut roots = vec![root.join("src")];
    for e in std::fs::read_dir(root.join("crates")).unwrap() {
        roots.push(e.unwrap().path().join("src"));
    }
    let mut out = Vec::new();
    for src in roots {
        let mut stack = vec![src.clone()];
        while let Some(p) = stack.pop() {
            if p.is_dir() {
                stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push((src.clone(), p));
            }
        }
    }
    assert!(out.len() > 200, "the workspace's sources were not found");
    out.sort();
    out
}
