//! The binary's provenance for the results' `build` field: the commit it was built from and
//! whether the tree had changes.

fn main() {
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
    for p in ["src", "crates", "tests", "Cargo.toml", "build.rs"] {
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
