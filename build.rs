//! Embeds every `workloads/*.f` file as a built-in personality.

use std::fmt::Write;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("workloads");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .expect("workloads/ directory")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "f"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    names.sort();
    let mut out = String::from(
        "/// Built-in personalities: (name, text).\npub static BUILTINS: &[(&str, &str)] = &[\n",
    );
    for (name, path) in &names {
        println!("cargo:rerun-if-changed={}", path.display());
        writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("builtins.rs");
    std::fs::write(dest, out).unwrap();
    git_provenance();
}

/// FSBENCH_GIT_COMMIT (`git rev-parse HEAD` or "unknown") and FSBENCH_GIT_MODIFIED ("true",
/// "false" or "unknown") for the results' `build` field.
fn git_provenance() {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "HEAD"]).filter(|c| c.len() == 40);
    let modified =
        match &commit {
            Some(_) => git(&["status", "--porcelain", "--untracked-files=no"])
                .map_or("unknown", |s| if s.is_empty() { "false" } else { "true" }),
            None => "unknown",
        };
    println!(
        "cargo:rustc-env=FSBENCH_GIT_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    println!("cargo:rustc-env=FSBENCH_GIT_MODIFIED={modified}");
    // Rebuild when HEAD moves: HEAD itself, the branch it names, and the index (a commit or
    // a staged change). In a worktree, `git rev-parse --git-path` finds the right files.
    // Whether the tree is modified changes with any source edit, so look again then.
    for p in ["src", "tests", "Cargo.toml", "build.rs"] {
        println!("cargo:rerun-if-changed={p}");
    }
    for p in ["HEAD", "index"] {
        if let Some(path) = git(&["rev-parse", "--git-path", p]) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(path) = git(&["rev-parse", "--git-path", &r]) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
