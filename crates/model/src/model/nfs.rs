//! What a workload needs of the local kernel that NFS through libnfs cannot give: mapped
//! files, direct I/O, asynchronous I/O, block devices and files outside the run directory.
//! `fsbench check --nfs` and `fsbench run --nfs` refuse these before anything is created,
//! each at its flowop's or job's place in the workload.

use super::{Flowop, Workload};
use crate::lang::Diagnostic;

/// Why `f` cannot run over NFS, if it cannot.
fn refusal(f: &Flowop) -> Option<String> {
    if f.mmap {
        return Some("`mmap` maps the file through the kernel's page cache; over NFS through libnfs there is no local file to map (drop `mmap`)".into());
    }
    if f.directio {
        return Some("`directio` is O_DIRECT, an open flag of the kernel's file systems; libnfs has no page cache to bypass (drop `directio`)".into());
    }
    if f.kind.def().kernel_aio {
        return Some(format!(
            "`{}` is asynchronous I/O through the kernel (io_uring); over NFS fsbench issues synchronous libnfs calls (use `write`)",
            f.kind.name()
        ));
    }
    let s = f.stream.as_ref()?;
    if s.mmap {
        return Some(
            "ioengine=mmap maps the files through the kernel; over NFS use ioengine=nfs (or psync)"
                .into(),
        );
    }
    if s.depth > 0 {
        return Some("an asynchronous engine (io_uring, libaio, posixaio) goes through the kernel; over NFS fsbench issues one synchronous libnfs call at a time (ioengine=nfs, iodepth=1)".into());
    }
    if s.direct {
        return Some("direct=1 is O_DIRECT, an open flag of the kernel's file systems; libnfs has no page cache to bypass (leave out direct)".into());
    }
    if let Some(sf) = s.files.iter().find(|sf| sf.device.is_some() || sf.external) {
        return Some(format!(
            "`{}` is a block device or a file outside the run directory; over NFS a job's files are in the run directory on the export",
            sf.name
        ));
    }
    if s.verify.is_some() {
        return Some("verify= does not run over NFS yet (leave out verify)".into());
    }
    None
}

impl Workload {
    /// What this workload needs that an NFS run cannot do, each with its place.
    pub fn nfs_refusals(&self) -> Vec<Diagnostic> {
        let mut out: Vec<Diagnostic> = Vec::new();
        for f in self.all_flowops() {
            if let Some(why) = refusal(f) {
                out.push(
                    Diagnostic::error(&self.source, f.span, format!("flowop `{}`: {why}", f.name))
                        .with_help("over NFS fsbench refuses what it would have to run on the local kernel instead"),
                );
            }
        }
        for fs in self.filesets.iter().filter(|fs| fs.reuse) {
            out.push(Diagnostic::error(
                &self.source,
                fs.span,
                format!("fileset `{}`: `reuse` keeps a directory between runs; over NFS every run lays its filesets out afresh in its own run directory (drop `reuse`)", fs.name),
            ));
        }
        out
    }
}
