//! `fsbench run --nfs URL` and fio's `ioengine=nfs`: workloads whose every file operation
//! goes to a user-space NFS server through libnfs, against NFS-Ganesha started for the
//! test (see `nfs_common`). Skipped where that server, rpcbind or libnfs is missing, or
//! without root.

use super::common;
use super::nfs_common::Server;
use std::path::Path;

/// A deterministic mix of the metadata and data flowops, ended by a count (not by time), so
/// two runs with the same seed do the same operations.
const MIX: &str = "\
define fileset name=fs,path=/tmp,entries=40,dirwidth=5,size=64k,prealloc=50
define process name=p,instances=1
{
  thread name=t,memsize=1m,instances=1
  {
    flowop createfile name=create,filesetname=fs,fd=1
    flowop write name=write,fd=1,iosize=16k
    flowop closefile name=close1,fd=1
    flowop openfile name=open,filesetname=fs,fd=1
    flowop read name=read,fd=1,iosize=8k
    flowop appendfile name=append,fd=1,iosize=4k
    flowop fsync name=sync,fd=1
    flowop closefile name=close2,fd=1
    flowop statfile name=stat,filesetname=fs
    flowop deletefile name=delete,filesetname=fs
    flowop finishoncount name=finish,value=60,target=delete
  }
}
run 60
";

/// Every (flowop, ops, bytes) of a result file.
fn counts(json: &Path) -> Vec<(String, u64, u64)> {
    let v = common::json_of(json);
    v["flowops"]
        .as_array()
        .expect("flowops")
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["ops"].as_u64().unwrap(),
                f["bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn errors(json: &Path) -> u64 {
    common::json_of(json)["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["errors"].as_u64().unwrap())
        .sum()
}

/// The names in a directory, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_mix_moves_the_same_bytes_over_nfs_as_locally() {
    let Some(srv) = Server::start("a_mix_moves_the_same_bytes_over_nfs_as_locally") else {
        return;
    };
    let s = common::Scratch::new("nfs-mix");
    let wl = s.path().join("mix.f");
    std::fs::write(&wl, MIX).unwrap();
    let (local, remote) = (s.path().join("local.json"), s.path().join("nfs.json"));
    let o = common::run(&[
        "run",
        wl.to_str().unwrap(),
        "-q",
        "--dir",
        s.s(),
        "--json",
        local.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::text(&o));
    let url = srv.url();
    let o = common::run(&[
        "run",
        wl.to_str().unwrap(),
        "-q",
        "--nfs",
        &url,
        "--json",
        remote.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::text(&o));
    assert_eq!(errors(&remote), 0, "{}", common::text(&o));
    let (l, r) = (counts(&local), counts(&remote));
    assert_eq!(l, r, "the same operations and bytes locally and over NFS");
    let moved: u64 = r.iter().map(|c| c.2).sum();
    assert!(moved > 60 * 8192, "bytes moved: {r:?}");
    // The run directory was on the export, and is gone with everything in it.
    assert!(
        names(&srv.export()).is_empty(),
        "{:?}",
        names(&srv.export())
    );
    let host = &common::json_of(&remote)["host"];
    assert!(
        host["fs_type"].as_str().unwrap().starts_with("nfs"),
        "{host}"
    );
}

#[test]
fn the_files_are_on_the_export_and_a_kept_run_directory_is_marked() {
    let Some(srv) = Server::start("the_files_are_on_the_export_and_a_kept_run_directory_is_marked")
    else {
        return;
    };
    let s = common::Scratch::new("nfs-keep");
    let wl = s.path().join("mix.f");
    std::fs::write(&wl, MIX).unwrap();
    let o = common::run(&["run", wl.to_str().unwrap(), "--keep", "--nfs", &srv.url()]);
    assert!(o.status.success(), "{}", common::text(&o));
    let runs = names(&srv.export());
    assert_eq!(runs.len(), 1, "one run directory on the export: {runs:?}");
    let rd = srv.export().join(&runs[0]);
    let marker = std::fs::read_to_string(rd.join(".fsbench-run")).unwrap();
    assert!(marker.starts_with("fsbench run directory"), "{marker}");
    // The fileset's preallocated files, written on the server with their planned size.
    let (files, dirs) = common::count_entries(&rd.join("fs"));
    assert!(
        files >= 10 && dirs >= 1,
        "{files} files, {dirs} directories"
    );
    // Named as the client sees it: the server's export path in the URL, then the run's.
    let export_url = srv.url();
    let export_url = export_url.split('?').next().unwrap();
    let kept = format!("kept {export_url}/{}", runs[0]);
    assert!(
        common::text(&o).contains(&kept),
        "{kept} not in:\n{}",
        common::text(&o)
    );
}

#[test]
fn cleanup_removes_only_its_own_run_directory_on_the_export() {
    let Some(srv) = Server::start("cleanup_removes_only_its_own_run_directory_on_the_export")
    else {
        return;
    };
    let export = srv.export();
    std::fs::write(export.join("sentinel"), b"not fsbench's").unwrap();
    std::fs::create_dir(export.join("fsbench-mix-1-1")).unwrap();
    std::fs::write(
        export.join("fsbench-mix-1-1/data"),
        b"looks like a run, is not one",
    )
    .unwrap();
    let before = common::tree_listing(&export);
    let s = common::Scratch::new("nfs-clean");
    let wl = s.path().join("mix.f");
    std::fs::write(&wl, MIX).unwrap();
    let o = common::run(&["run", wl.to_str().unwrap(), "-q", "--nfs", &srv.url()]);
    assert!(o.status.success(), "{}", common::text(&o));
    assert_eq!(
        common::tree_listing(&export),
        before,
        "the export is as it was"
    );
    assert_eq!(
        std::fs::read(export.join("sentinel")).unwrap(),
        b"not fsbench's"
    );
}

#[test]
fn fileserver_runs_over_nfs() {
    let Some(srv) = Server::start("fileserver_runs_over_nfs") else {
        return;
    };
    let s = common::Scratch::new("nfs-fileserver");
    let json = s.path().join("r.json");
    let o = common::run(&[
        "run",
        "fileserver",
        "-q",
        "--nfs",
        &srv.url(),
        "-s",
        "nfiles=200",
        "-s",
        "nthreads=4",
        "-s",
        "meandirwidth=10",
        "--duration",
        "3",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::text(&o));
    assert_eq!(errors(&json), 0);
    let c = counts(&json);
    for name in [
        "createfile1",
        "wrtfile1",
        "appendfilerand1",
        "readfile1",
        "deletefile1",
        "statfile1",
    ] {
        let (_, ops, _) = c
            .iter()
            .find(|x| x.0 == name)
            .unwrap_or_else(|| panic!("{name}: {c:?}"));
        assert!(*ops > 0, "{name}: {c:?}");
    }
    assert!(names(&srv.export()).is_empty());
}

#[test]
fn a_fio_job_with_ioengine_nfs_writes_and_reads_on_the_export() {
    let Some(srv) = Server::start("a_fio_job_with_ioengine_nfs_writes_and_reads_on_the_export")
    else {
        return;
    };
    let s = common::Scratch::new("nfs-fio");
    let job = s.path().join("j.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nioengine=nfs\nnfs_url={}\nbs=64k\nsize=4m\n[w]\nrw=write\nfsync=16\n[r]\nstonewall\nrw=randread\n",
            srv.url()
        ),
    )
    .unwrap();
    let json = s.path().join("r.json");
    let o = common::run(&[
        "run",
        job.to_str().unwrap(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::text(&o));
    assert_eq!(errors(&json), 0);
    let c = counts(&json);
    let bytes = |n: &str| {
        c.iter()
            .find(|x| x.0 == n)
            .map(|x| x.2)
            .unwrap_or_else(|| panic!("{n}: {c:?}"))
    };
    assert_eq!(bytes("w write"), 4 << 20, "{c:?}");
    assert_eq!(bytes("r read"), 4 << 20, "{c:?}");
    assert!(names(&srv.export()).is_empty());
    // fio's option checks: the engine needs its URL.
    std::fs::write(&job, "[a]\nioengine=nfs\nrw=read\nsize=1m\n").unwrap();
    let o = common::run(&["check", job.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        common::text(&o).contains("ioengine=nfs needs nfs_url"),
        "{}",
        common::text(&o)
    );
    // What the kernel would have to do is refused at its option, before anything is made.
    let url = srv.url();
    std::fs::write(
        &job,
        format!("[a]\nioengine=nfs\nnfs_url={url}\nrw=read\nsize=1m\ndirect=1\n"),
    )
    .unwrap();
    let o = common::run(&["run", job.to_str().unwrap()]);
    let out = common::text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains("j.fio:6:1") && out.contains("O_DIRECT"),
        "{out}"
    );
    assert!(names(&srv.export()).is_empty());
}

#[test]
fn mmap_and_directio_are_refused_with_their_place_before_anything_is_made() {
    let Some(srv) =
        Server::start("mmap_and_directio_are_refused_with_their_place_before_anything_is_made")
    else {
        return;
    };
    let s = common::Scratch::new("nfs-refuse");
    let wl = s.path().join("m.f");
    std::fs::write(
        &wl,
        "define fileset name=fs,path=/tmp,entries=4,dirwidth=2,size=64k,prealloc=100\n\
         define process name=p {\n thread name=t {\n  flowop read name=r,filesetname=fs,iosize=4k,mmap\n  flowop write name=w,filesetname=fs,iosize=4k,directio\n }\n}\nrun 2\n",
    )
    .unwrap();
    let o = common::run(&["run", wl.to_str().unwrap(), "--nfs", &srv.url()]);
    let out = common::text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("mmap") && out.contains("m.f:4:"), "{out}");
    assert!(out.contains("directio") && out.contains("m.f:5:"), "{out}");
    assert!(
        names(&srv.export()).is_empty(),
        "nothing was created on the export"
    );
    let o = common::run(&["check", wl.to_str().unwrap(), "--nfs", &srv.url()]);
    assert!(!o.status.success());
    assert!(
        common::text(&o).contains("over NFS"),
        "{}",
        common::text(&o)
    );
    // Without --nfs the same workload checks fine.
    let o = common::run(&["check", "-q", wl.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::text(&o));
}

/// A workload that runs four seconds doing little, so a test can change its run directory
/// on the server while it runs.
const SLOW: &str = "\
define fileset name=fs,path=/tmp,entries=8,dirwidth=4,size=4k,prealloc=100
define process name=p
{
  thread name=t
  {
    flowop statfile name=s,filesetname=fs
    flowop delay name=d,value=1
  }
}
run 4
";

/// Run `fsbench run SLOW --nfs`, calling `meddle` with its run directory on the export once
/// the fileset is laid out; its output.
fn run_slow(srv: &Server, s: &common::Scratch, meddle: impl FnOnce(&Path)) -> std::process::Output {
    let wl = s.path().join("slow.f");
    std::fs::write(&wl, SLOW).unwrap();
    let mut child = common::bin()
        .args(["run", wl.to_str().unwrap(), "-q", "--nfs", &srv.url()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    let rd = loop {
        let rd = (names(&srv.export()).into_iter())
            .find(|n| n.starts_with("fsbench-slow"))
            .map(|n| srv.export().join(n));
        if let Some(rd) =
            rd.filter(|rd| rd.join("fs").is_dir() && rd.join(".fsbench-run").is_file())
        {
            break Some(rd);
        }
        if t0.elapsed().as_secs() > 30 {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    if let Some(rd) = &rd {
        meddle(rd);
    }
    let o = child.wait_with_output().unwrap();
    assert!(
        rd.is_some(),
        "no run directory appeared on the export: {}",
        common::text(&o)
    );
    o
}

#[test]
fn links_planted_in_the_run_directory_are_removed_never_followed() {
    let Some(srv) = Server::start("links_planted_in_the_run_directory_are_removed_never_followed")
    else {
        return;
    };
    let s = common::Scratch::new("nfs-links");
    // Beside the run directory on the export: what a link inside it could lead to.
    let outside = srv.export().join("outside");
    std::fs::create_dir_all(outside.join("sub")).unwrap();
    std::fs::write(outside.join("precious"), b"keep me").unwrap();
    std::fs::write(outside.join("sub/also"), b"and me").unwrap();
    let before = common::tree_listing(&outside);
    let o = run_slow(&srv, &s, |rd| {
        std::os::unix::fs::symlink("../../outside", rd.join("fs/escape")).unwrap();
        std::os::unix::fs::symlink("../outside", rd.join("up")).unwrap();
        std::os::unix::fs::symlink("../../outside/precious", rd.join("fs/00000099")).unwrap();
    });
    assert!(o.status.success(), "{}", common::text(&o));
    assert_eq!(
        common::tree_listing(&outside),
        before,
        "nothing outside was touched"
    );
    assert_eq!(std::fs::read(outside.join("precious")).unwrap(), b"keep me");
    assert_eq!(names(&srv.export()), ["outside"]);
}

#[test]
fn a_run_directory_whose_marker_was_forged_is_left_alone() {
    let Some(srv) = Server::start("a_run_directory_whose_marker_was_forged_is_left_alone") else {
        return;
    };
    let s = common::Scratch::new("nfs-forged");
    let mut kept = None;
    let o = run_slow(&srv, &s, |rd| {
        // Rewritten in place: the server keeps serving the file it knows by its handle (a
        // new inode under the same name is not seen until its caches expire).
        std::fs::write(rd.join(".fsbench-run"), b"someone else's directory\n").unwrap();
        kept = Some(rd.to_path_buf());
    });
    let out = common::text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains("refusing to remove") && out.contains("marker"),
        "{out}"
    );
    assert!(
        kept.unwrap().join("fs").is_dir(),
        "the directory was left as it was"
    );
}
