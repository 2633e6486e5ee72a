//! Filebench fidelity: runs end, count and pick where Filebench's rules say they do.
use crate::common::*;
use serde_json::Value;
use std::collections::BTreeSet;

fn run_wl(dir: &Scratch, body: &str, extra: &[&str]) -> (Value, String) {
    let f = dir.path().join("w.f");
    std::fs::write(&f, body).unwrap();
    let json = dir.path().join("r.json");
    let mut args = vec![
        "run",
        f.to_str().unwrap(),
        "--dir",
        dir.s(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (v, text(&o))
}

const CREATE: &str =
    "define fileset name=f,path=\"/tmp\",entries=20,dirwidth=5,filesize=1k,prealloc=0
define process name=p {
  thread name=t {
    flowop createfile name=c1,filesetname=f
    flowop closefile name=x1
  }
}
run 30
";

#[test]
fn fileset_exhaustion_ends_the_run_and_names_the_flowop() {
    // Filebench (flowop.c): FILEBENCH_NORSC ends the thread and, outside alldone mode,
    // the run. 20 absent entries allow exactly 20 creates; the 21st ends the run.
    let dir = Scratch::new("exhaust");
    let (v, _) = run_wl(&dir, CREATE, &[]);
    assert_eq!(flowop(&v, "c1")["ops"], 20, "{v}");
    assert_eq!(flowop(&v, "x1")["ops"], 20, "{v}");
    assert_eq!(flowop(&v, "c1")["no_resource"], 1, "{v}");
    assert!(v["duration_s"].as_f64().unwrap() < 20.0, "{v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("c1") && notes.contains("exhausted"),
        "{notes}"
    );
}

#[test]
fn continue_when_exhausted_keeps_counting() {
    let dir = Scratch::new("exhaust-go-on");
    let body = CREATE.replace("run 30", "run 1");
    let (v, _) = run_wl(&dir, &body, &["--continue-when-exhausted"]);
    assert_eq!(flowop(&v, "c1")["ops"], 20, "{v}");
    assert!(flowop(&v, "c1")["no_resource"].as_u64().unwrap() > 1, "{v}");
    assert!(v["duration_s"].as_f64().unwrap() >= 0.9, "{v}");
}

#[test]
fn io_summary_counts_fsync_and_listdir_but_listdir_is_not_a_read() {
    // Filebench (flowop_library.c, stats.c): fsync and listdir are FLOW_TYPE_IO, so the
    // IO summary sums them; rd/wr count FLOW_ATTR_READ/WRITE flowops only.
    let dir = Scratch::new("summary");
    let body = "define fileset name=f,path=\"/tmp\",entries=4,dirwidth=2,filesize=16k,prealloc=100
define process name=p {
  thread name=t {
    flowop write name=w1,filesetname=f,iosize=4k
    flowop fsync name=s1
    flowop listdir name=l1,filesetname=f
  }
}
run 1
";
    let (v, _) = run_wl(&dir, body, &[]);
    let c = |n: &str| flowop(&v, n)["ops"].as_u64().unwrap();
    let (w, s, l) = (c("w1"), c("s1"), c("l1"));
    assert!(w > 0 && s > 0 && l > 0, "{v}");
    let sum = &v["summary"];
    assert_eq!(sum["ops"].as_u64().unwrap(), w + s + l, "{v}");
    let d = v["duration_s"].as_f64().unwrap();
    let rd = sum["read_ops_per_s"].as_f64().unwrap();
    assert!(rd * d < 0.5, "listdir counted as a read: {v}");
    assert_eq!(flowop(&v, "s1")["io_class"], "meta");
    // Filebench's listdir bytes: strlen(d_name) + sizeof(struct dirent) - 1 (279 on Linux
    // x86-64 and arm64) for each entry read, "." and ".." included: every directory listed
    // holds at least one entry besides those two.
    let lb = flowop(&v, "l1")["bytes"].as_u64().unwrap();
    assert!(lb / l >= 3 * 279 + 3, "{} bytes per listdir", lb / l);
}

#[test]
fn finishoncount_without_target_counts_its_own_calls() {
    // Filebench (flowop.c flowop_endop): the process's control count grows for every
    // flowop whose type has the IO or AIO bit, and finishoncount is FLOW_TYPE_OTHER (5),
    // so it counts its own calls. A loop of one append and the finish, where the first
    // append also opens the file (an operation of the append, as in Filebench): at loop k
    // the finish sees 1 open, k appends and k − 1 finishes, 2k ≥ 256 first at k = 128. The
    // append flowop reports 129 operations, as Filebench's filemicro_create does.
    let dir = Scratch::new("finish-count");
    let body = "define file name=log,path=\"/tmp\",size=0,prealloc
define process name=p {
  thread name=t {
    flowop appendfile name=a,filename=log,iosize=1k
    flowop finishoncount name=f,value=256
  }
}
run 30
";
    let (v, _) = run_wl(&dir, body, &[]);
    assert_eq!(flowop(&v, "a")["ops"], 129, "{v}");
    assert_eq!(flowop(&v, "a")["bytes"], 128 * 1024, "{v}");
    assert_eq!(flowop(&v, "f")["ops"], 128, "{v}");
    // With a target only that flowop's operations count (the open included).
    let (v, _) = run_wl(&dir, &body.replace("value=256", "value=256,target=a"), &[]);
    assert_eq!(flowop(&v, "a")["ops"], 256, "{v}");
    assert_eq!(flowop(&v, "a")["bytes"], 255 * 1024, "{v}");
}

/// Thread `t` finishes after 50 stats; thread `u` after `other` stats of its own.
fn finish_two_threads(mode: &str, other: u64) -> String {
    format!(
        "set mode quit {mode}
define fileset name=f,path=\"/tmp\",entries=4,dirwidth=4,filesize=1k,prealloc=100
define process name=p {{
  thread name=t {{
    flowop statfile name=s,filesetname=f
    flowop finishoncount name=fin,value=50,target=s
  }}
}}
define process name=q {{
  thread name=u {{
    flowop statfile name=s2,filesetname=f
    flowop finishoncount name=fin2,value={other},target=s2
  }}
}}
run 60
"
    )
}

#[test]
fn a_finish_flowop_in_alldone_mode_ends_only_its_thread() {
    // Filebench's current source (flowop_library.c since August 2016): a finish flowop
    // that is done returns FILEBENCH_NORSC, which ends its thread; in `alldone` mode
    // (flowop.c) the run goes on until every thread is done. Thread t is done after 50
    // stats, thread u after 20,000: u runs to its own end.
    let dir = Scratch::new("finish-alldone");
    let (v, _) = run_wl(&dir, &finish_two_threads("alldone", 20_000), &[]);
    assert_eq!(flowop(&v, "s")["ops"], 50, "{v}");
    assert_eq!(flowop(&v, "s2")["ops"], 20_000, "{v}");
    // It ended when both were done, not at the run's 60 s.
    assert!(v["duration_s"].as_f64().unwrap() < 59.0, "{v}");
    assert!(!v["notes"].to_string().contains("ended early"), "{v}");
}

#[test]
fn a_finish_flowop_ends_the_run_outside_alldone_mode_or_with_the_option() {
    // flowop.c: FILEBENCH_NORSC in firstdone mode ends the run; in the default (timeout)
    // mode it ends it too, with Filebench's "Run stopped early" warning (a note here).
    // --finish-ends-run restores the 1.5-alpha3 tag, where FILEBENCH_DONE ended the run in
    // every mode, alldone included. Thread u would run for ever (value far out of reach).
    let dir = Scratch::new("finish-ends-run");
    for (mode, extra, note) in [
        ("timeout", &[][..], true),
        ("firstdone", &[][..], false),
        ("alldone", &["--finish-ends-run"][..], false),
    ] {
        let (v, _) = run_wl(&dir, &finish_two_threads(mode, u64::MAX / 2), extra);
        assert_eq!(flowop(&v, "s")["ops"], 50, "{mode}: {v}");
        let d = v["duration_s"].as_f64().unwrap();
        assert!(d < 59.0, "{mode}: the run went to its 60 s ({d} s)");
        let notes = v["notes"].to_string();
        assert_eq!(
            notes.contains("finish flowop fin is done"),
            note,
            "{mode}: {notes}"
        );
    }
}

#[test]
fn a_busy_entry_is_waited_for_not_taken_for_exhaustion() {
    // Filebench (fileset.c fileset_pick): while every entry of the fileset is busy in other
    // threads, a pick waits for one to be released; only a fileset with no free entry in
    // the wanted state while some entry is idle is exhausted. Four threads open and close
    // the one file of a fileset: each open finds it busy now and then, and the run must go
    // on for its whole second.
    let dir = Scratch::new("busy-wait");
    let body = "define fileset name=f,path=\"/tmp\",entries=1,dirwidth=1,filesize=1k,prealloc=100
define process name=p {
  thread name=t,instances=4 {
    flowop openfile name=o,filesetname=f,fd=1
    flowop closefile name=c,fd=1
  }
}
run 1
";
    let (v, _) = run_wl(&dir, body, &[]);
    assert_eq!(flowop(&v, "o")["no_resource"], 0, "{}", v["notes"]);
    assert!(flowop(&v, "o")["ops"].as_u64().unwrap() > 1000);
    let d = v["duration_s"].as_f64().unwrap();
    assert!(d > 0.9, "the run ended after {d} s: {}", v["notes"]);
}

#[test]
fn rate_limits_without_eventgen_are_not_operations() {
    // Filebench (flowop_library.c): eventlimit, iopslimit, opslimit and bwlimit return
    // before their endop when no eventgen rate is set, so they count nothing.
    let dir = Scratch::new("limits-uncounted");
    let body = "define fileset name=f,path=\"/tmp\",entries=4,dirwidth=4,filesize=4k,prealloc=100
define process name=p {
  thread name=t {
    flowop statfile name=s,filesetname=f
    flowop eventlimit name=e
    flowop iopslimit name=i
    flowop opslimit name=o
    flowop bwlimit name=b
  }
}
run 1
";
    let (v, _) = run_wl(&dir, body, &[]);
    assert!(flowop(&v, "s")["ops"].as_u64().unwrap() > 100, "{v}");
    for n in ["e", "i", "o", "b"] {
        assert_eq!(flowop(&v, n)["ops"], 0, "{n}: {v}");
    }
}

#[test]
fn create_files_then_quit_lays_out_and_ends() {
    // Filebench: `create files` lays the filesets out; a script that then quits without
    // `run` ends there, nothing runs.
    let dir = Scratch::new("create-quit");
    let body = "define fileset name=f,path=\"/tmp\",entries=30,dirwidth=5,filesize=2k,prealloc=100
define process name=p {
  thread name=t {
    flowop statfile name=s,filesetname=f
  }
}
create files
quit
";
    let t0 = std::time::Instant::now();
    let (v, out) = run_wl(&dir, body, &[]);
    assert!(t0.elapsed().as_secs_f64() < 20.0, "{out}");
    assert_eq!(v["layout"]["files_written"], 30, "{v}");
    assert_eq!(flowop(&v, "s")["ops"], 0, "{v}");
    assert_eq!(v["duration_s"], 0.0, "{v}");
    assert!(v["notes"].to_string().contains("no `run`"), "{v}");
    assert!(!out.contains("has no `run` command"), "{out}");
}

#[test]
fn a_full_file_system_ends_the_run() {
    // Filebench shuts the run down when a flowop fails; a full file system is the case that
    // matters: numbers from a full disk measure error paths. fsbench ends the run there with
    // the results so far and says why; --continue-on-enospc counts and goes on.
    if !is_root() {
        skip("needs root to mount a small tmpfs");
        return;
    }
    let t = Scratch::new("enospc");
    let m = t.path().join("mnt");
    std::fs::create_dir_all(&m).unwrap();
    if let Err(e) = run_ok(
        "mount",
        &["-t", "tmpfs", "-o", "size=4m", "none", m.to_str().unwrap()],
    ) {
        skip(&e);
        return;
    }
    let _mount = Mount(m.clone());
    let f = t.path().join("fill.f");
    std::fs::write(
        &f,
        "define fileset name=f,path=\"/tmp\",entries=1,dirwidth=1,filesize=4k,prealloc=100
define process name=p {
  thread name=t {
    flowop appendfile name=a,filesetname=f,iosize=64k
  }
}
run 30
",
    )
    .unwrap();
    let go = |extra: &[&str]| -> Value {
        let json = t.path().join("r.json");
        let mut args = vec![
            "run",
            f.to_str().unwrap(),
            "--dir",
            m.to_str().unwrap(),
            "-q",
            "--json",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", text(&o));
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
    };
    let v = go(&[]);
    let a = flowop(&v, "a");
    assert_eq!(a["errors"], 1, "{v}");
    assert!(a["ops"].as_u64().unwrap() >= 40, "{v}");
    assert!(v["duration_s"].as_f64().unwrap() < 20.0, "{v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("file system is full") && notes.contains("flowop a"),
        "{notes}"
    );
    // Counting and going on: the run lasts its time and every failed append is an error.
    let v = go(&["--continue-on-enospc", "--duration", "1"]);
    assert!(flowop(&v, "a")["errors"].as_u64().unwrap() > 1, "{v}");
    assert!(v["duration_s"].as_f64().unwrap() >= 0.9, "{v}");
}

#[test]
fn an_implicit_open_is_an_operation_of_the_flowop_that_needed_it() {
    // Filebench (flowoplib_openfile_common): a read or write on a closed slot opens a file
    // between its own beginop and endop, so the open counts as one more operation of that
    // flowop. Here every loop closes the slot, so each read is two operations.
    let dir = Scratch::new("implicit-open");
    let body = "define fileset name=f,path=\"/tmp\",entries=8,dirwidth=8,filesize=8k,prealloc=100
define process name=p {
  thread name=t {
    flowop read name=r,filesetname=f,iosize=4k
    flowop closefile name=c
  }
}
run 1
";
    let (v, _) = run_wl(&dir, body, &[]);
    let (r, c) = (
        flowop(&v, "r")["ops"].as_u64().unwrap(),
        flowop(&v, "c")["ops"].as_u64().unwrap(),
    );
    assert!(c > 50, "{v}");
    assert!(
        r == 2 * c || r == 2 * c + 2,
        "{r} reads for {c} closes: {v}"
    );
    // Half of them moved no bytes (the opens).
    assert_eq!(
        flowop(&v, "r")["bytes"].as_u64().unwrap(),
        r / 2 * 4096,
        "{v}"
    );
}

#[test]
fn aiowrite_counts_submissions_and_reports_completions_beside_them() {
    // Filebench (flowoplib_aiowrite): the operation is the aio_write submission, with its
    // bytes; aiowait is one operation per call. Completions are reported beside them.
    let dir = Scratch::new("aio-count");
    let body = "define file name=log,path=\"/tmp\",size=1m,prealloc
define process name=p {
  thread name=t {
    flowop aiowrite name=aw,filename=log,iosize=4k,random
    flowop aiowait name=wait
  }
}
run 1
";
    let (v, _) = run_wl(&dir, body, &[]);
    let aw = flowop(&v, "aw");
    let ops = aw["ops"].as_u64().unwrap();
    let waits = flowop(&v, "wait")["ops"].as_u64().unwrap();
    assert!(ops > 20, "{v}");
    // One more for the implicit open of the first call; one more if the run stopped
    // between a submission and its wait.
    assert!(
        ops == waits + 1 || ops == waits + 2,
        "{ops} operations, {waits} waits"
    );
    // The first call also opened the file: an operation without bytes.
    assert_eq!(aw["bytes"].as_u64().unwrap(), (ops - 1) * 4096, "{v}");
    let done = aw["aio"]["completions"].as_u64().unwrap();
    // aiowait reaps at least one each time: everything but the last few is reaped.
    assert!(
        done <= ops && done + 4 >= ops,
        "{done} of {ops} reaped: {v}"
    );
    assert!(
        aw["aio"]["completion_mean_us"].as_f64().unwrap() > 0.0,
        "{v}"
    );
}

#[test]
fn flowops_inside_a_composite_are_reported_by_their_qualified_names() {
    // Filebench (parser_inner_flowop_define): an inner flowop of a composite used as
    // `name=rw1` is named `rw1.<inner name>`; nested composites add their names in turn.
    // A target naming an inner flowop by its own name still finds it.
    let dir = Scratch::new("composite-names");
    let body = "define fileset name=f,path=\"/tmp\",entries=8,dirwidth=8,filesize=4k,prealloc=100
define flowop name=readone, $fs
{
  flowop openfile name=open1,filesetname=$fs,fd=1
  flowop readwholefile name=read1,fd=1
  flowop closefile name=close1,fd=1
}
define flowop name=outer, $fs
{
  flowop readone name=inner, $fs=$fs
  flowop statfile name=stat1,filesetname=$fs
}
define process name=p {
  thread name=t {
    flowop readone name=rw1, $fs=f
    flowop outer name=o1, $fs=f
    flowop finishoncount name=done,value=20,target=read1
  }
}
run 30
";
    let (v, _) = run_wl(&dir, body, &[]);
    for name in [
        "rw1.open1",
        "rw1.read1",
        "rw1.close1",
        "o1.inner.open1",
        "o1.inner.read1",
        "o1.stat1",
    ] {
        assert!(flowop(&v, name)["ops"].as_u64().unwrap() > 0, "{name}: {v}");
    }
    // The target `read1` is the first flowop of that name (rw1's): 20 reads end the run.
    assert_eq!(flowop(&v, "rw1.read1")["ops"], 20, "{v}");
}

#[test]
fn opennext_rotates_over_all_128_slots_of_a_thread() {
    // Filebench (flowop_library.c flowoplib_fdnum): a rotating-fd flowop cycles through
    // all THREADFLOW_MAXFD (128) slots of its thread whatever the fileset's size, and a
    // read on an empty slot first opens a file into it (a zero-byte operation of the read).
    // On a 10-file fileset each thread opens 128 times, then only reads; a fileset of more
    // than 128 files runs the same way.
    let dir = Scratch::new("opennext");
    for entries in [10, 200] {
        let body = format!(
            "define fileset name=f,path=\"/tmp\",entries={entries},dirwidth=1000,size=16k,prealloc
define process name=p {{
  thread name=t,instances=2 {{
    flowop read name=r,filesetname=f,iosize=4k,random,opennext
  }}
}}
run 1
"
        );
        let (v, _) = run_wl(&dir, &body, &[]);
        let r = flowop(&v, "r");
        let (ops, bytes) = (r["ops"].as_u64().unwrap(), r["bytes"].as_u64().unwrap());
        assert!(bytes / 4096 > 256, "too few reads to fill the slots: {v}");
        assert_eq!(
            ops - bytes / 4096,
            2 * 128,
            "opens on {entries} entries: {v}"
        );
        assert_eq!(r["errors"].as_u64().unwrap_or(0), 0, "{v}");
    }
}

/// Directories under the kept fileset `name` (anywhere below `root`) and how many files each
/// holds, deepest paths included; the fileset's own root is left out.
fn tree_under(root: &std::path::Path, name: &str) -> Vec<(std::path::PathBuf, usize)> {
    fn find(p: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
        for e in std::fs::read_dir(p).ok()?.flatten() {
            let q = e.path();
            if e.file_type().ok()?.is_dir() {
                if e.file_name() == name {
                    return Some(q);
                }
                if let Some(r) = find(&q, name) {
                    return Some(r);
                }
            }
        }
        None
    }
    fn walk(p: &std::path::Path, out: &mut Vec<(std::path::PathBuf, usize)>) {
        let mut files = 0;
        for e in std::fs::read_dir(p).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), out);
            } else {
                files += 1;
            }
        }
        out.push((p.to_path_buf(), files));
    }
    let top = find(root, name).unwrap_or_else(|| panic!("no fileset {name} under {root:?}"));
    let mut out = Vec::new();
    walk(&top, &mut out);
    out.retain(|(p, _)| *p != top);
    out
}

#[test]
fn dirgamma_zero_makes_exact_widths() {
    // Filebench (fileset.c fileset_populate_subdir): with dirgamma=0 every directory's depth
    // threshold is (int)meandepth and its width exactly dirwidth (`i < ranwidth + 1`).
    // createdelete-swing's tree (1,000 files, dirwidth 1,000): mean depth 1, one directory
    // holding all the files. 100 files, dirwidth 10: mean depth 2, ten directories of ten.
    for (entries, width, dirs) in [(1000, 1000, 1), (100, 10, 10)] {
        let dir = Scratch::new("dirgamma0");
        let body = format!(
            "define fileset name=f,path=\"/tmp\",entries={entries},dirwidth={width},dirgamma=0,size=0,prealloc
define process name=p {{
  thread name=t {{
    flowop statfile name=s,filesetname=f
  }}
}}
create files
quit
"
        );
        let (v, _) = run_wl(&dir, &body, &["--keep"]);
        assert_eq!(v["layout"]["files_written"], entries, "{v}");
        let tree = tree_under(dir.path(), "f");
        assert_eq!(
            tree.len(),
            dirs,
            "{entries} files, dirwidth {width}: {tree:?}"
        );
        for (p, n) in &tree {
            assert_eq!(*n, entries / dirs, "{p:?} in {tree:?}");
        }
    }
}

#[test]
fn listdir_rotates_over_every_directory_root_included() {
    // Filebench (flowop_library.c flowoplib_listdir, fileset.c fileset_pick with
    // FILESET_PICKDIR): listdir rotates over fs_dirs, every directory of the fileset in the
    // order it was made, its root first, whether it holds files or not. Each listing counts
    // strlen(d_name) + sizeof(struct dirent) - 1 per entry read, "." and ".." included.
    // 125 files at dirwidth 5 with dirgamma=0 (mean depth 3) and prealloc=0: the root holds
    // five directories, each of those five leaf directories, and the 25 leaves are empty.
    let dir = Scratch::new("listdir-all");
    let body =
        "define fileset name=f,path=\"/tmp\",entries=125,dirwidth=5,dirgamma=0,size=0,prealloc=0
define process name=p {
  thread name=t {
    flowop listdir name=l,filesetname=f
  }
}
run 1
";
    let (v, _) = run_wl(&dir, body, &[]);
    let per = std::mem::size_of::<libc::dirent>() as u64 - 1;
    // "." and "..": 3 bytes of names; five 8-digit names more in a directory of directories.
    let full = 3 + 40 + 7 * per;
    let empty = 3 + 2 * per;
    let mut order = vec![full];
    for _ in 0..5 {
        order.push(full);
        order.extend(std::iter::repeat_n(empty, 5));
    }
    assert_eq!(v["layout"]["dirs"], 30, "{v}");
    let l = flowop(&v, "l");
    let ops = l["ops"].as_u64().unwrap();
    assert!(ops > 31, "{v}");
    let want: u64 = (0..ops).map(|i| order[(i % 31) as usize]).sum();
    assert_eq!(l["bytes"].as_u64().unwrap(), want, "{ops} listdirs: {v}");
}

#[test]
fn a_delete_of_a_file_open_elsewhere_is_skipped_not_counted() {
    // Filebench (flowop_library.c flowoplib_deletefile): a picked file that another thread
    // has open is left alone and the flowop returns without an operation; the run goes on.
    // Thread `a` holds both files open; thread `b` keeps trying to delete one.
    let dir = Scratch::new("skip-open");
    let body = "define fileset name=f,path=\"/tmp\",entries=2,dirwidth=2,filesize=1k,prealloc=100
define process name=p {
  thread name=a {
    flowop openfile name=o1,filesetname=f,fd=1
    flowop openfile name=o2,filesetname=f,fd=2
    flowop delay name=hold,value=100
  }
  thread name=b {
    flowop think name=later,value=200000
    flowop deletefile name=del,filesetname=f
  }
}
run 1
";
    let (v, report) = run_wl(&dir, body, &[]);
    let del = flowop(&v, "del");
    assert_eq!(del["ops"], 0, "{v}");
    assert_eq!(del["no_resource"], 0, "{v}");
    let skipped = del["skipped"].as_u64().unwrap();
    assert!(skipped >= 2, "{v}");
    assert!(v["duration_s"].as_f64().unwrap() > 0.9, "{}", v["notes"]);
    assert!(
        report.contains(&format!("{skipped} skipped (file open elsewhere)")),
        "{report}"
    );
}

/// Thread-seconds the flowops' latencies add up to: the sum over flowops of ops × mean.
fn latency_seconds(v: &Value) -> f64 {
    v["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["ops"].as_f64().unwrap() * f["latency_us"]["mean"].as_f64().unwrap() / 1e6)
        .sum()
}

#[test]
fn whole_flowop_latencies_add_up_to_the_threads_time() {
    // By default a latency covers the flowop's system calls, as Filebench's
    // flowop_beginop/flowop_endop bracket them; `--latency flowop` covers the whole
    // flowop, the pick included. Here the stat's pick is long: it looks for an existing
    // file from entry 100,000 on, and the files created so far are the first ones, so it
    // walks about 100,000 entries before it wraps around to them.
    let dir = Scratch::new("latency-whole");
    let body =
        "define fileset name=f,path=\"/tmp\",entries=200000,dirwidth=20000,filesize=0,prealloc=0
define process name=p {
  thread name=t {
    flowop createfile name=c,filesetname=f,fd=1
    flowop closefile name=x,fd=1
    flowop statfile name=s,filesetname=f,indexed=100000
  }
}
run 1
";
    let (calls, _) = run_wl(&dir, body, &[]);
    let (whole, _) = run_wl(&dir, body, &["--latency", "flowop"]);
    let busy = |v: &Value| latency_seconds(v) / v["duration_s"].as_f64().unwrap();
    let stat = |v: &Value| flowop(v, "s")["latency_us"]["mean"].as_f64().unwrap();
    // Below 1 by the loop between flowops, more of it when the machine is busy.
    assert!(busy(&whole) > 0.8, "{} of the thread's time", busy(&whole));
    // The calls' share leaves the picks out: by how much depends on how long the creates
    // take on the file system under the test, so only the stat, whose pick is long, is
    // compared.
    assert!(busy(&calls) <= busy(&whole) + 0.02, "{}", busy(&calls));
    assert!(
        stat(&whole) > 5.0 * stat(&calls),
        "{} vs {}",
        stat(&whole),
        stat(&calls)
    );
    assert!(whole["notes"].to_string().contains("--latency flowop"));
    assert!(!calls["notes"].to_string().contains("--latency flowop"));
    // Both count the same kind of operations (each stat walks 100,000 entries: a debug
    // build on a busy machine makes a few dozen in the second).
    for v in [&calls, &whole] {
        assert!(flowop(v, "s")["ops"].as_u64().unwrap() > 10, "{v}");
        assert_eq!(flowop(v, "s")["no_resource"], 0, "{v}");
    }
}

/// A directory on the tmpfs at /dev/shm, removed on drop; `None` where there is none.
struct ShmDir(std::path::PathBuf);

impl ShmDir {
    fn new(tag: &str) -> Option<ShmDir> {
        let shm = std::path::Path::new("/dev/shm");
        let tmpfs = std::fs::read_to_string("/proc/mounts")
            .unwrap_or_default()
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some("/dev/shm") && l.contains(" tmpfs "));
        if !tmpfs || !shm.is_dir() {
            return None;
        }
        let p = shm.join(format!("fsbench-test-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&p).ok()?;
        Some(ShmDir(p))
    }
}

impl Drop for ShmDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn fileserver_at_2000_files_and_16_threads_runs_its_time() {
    // fileserver with 2,000 files (80% preallocated) and 16 threads, on a RAM-backed file
    // system: each loop creates a file and deletes one, unless the delete's pick lands on a
    // file another thread has open (flowop_library.c flowoplib_deletefile skips it). The
    // fileset runs out of absent files only if about 400 deletes are skipped.
    let Some(dir) = ShmDir::new("fileserver") else {
        return skip("no tmpfs at /dev/shm");
    };
    let json = dir.0.join("r.json");
    let o = run(&[
        "run",
        "fileserver",
        "-s",
        "nfiles=2000",
        "-s",
        "nthreads=16",
        "--duration",
        "20",
        "--dir",
        dir.0.to_str().unwrap(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let notes = v["notes"].to_string();
    let creates = flowop(&v, "createfile1")["ops"].as_i64().unwrap();
    let deletes = flowop(&v, "deletefile1")["ops"].as_i64().unwrap();
    let skipped = flowop(&v, "deletefile1")["skipped"].as_i64().unwrap();
    // The fileset has 400 absent entries. Skipped deletes (Filebench's rule: the picked
    // file is open elsewhere) are each one file more; the run may end by exhaustion only
    // once they have used the 400 up, less the entries the 16 threads hold between their
    // create and delete or busy in a pick (two each at most). That takes about 300,000
    // loops here, more than 20 s makes unless the machine is busy and threads hold files
    // open longer.
    if notes.contains("exhausted") {
        assert!(
            skipped >= 400 - 2 * 16,
            "exhausted with only {skipped} skipped: {notes}"
        );
    } else {
        assert!(v["duration_s"].as_f64().unwrap() > 19.0, "{notes}");
    }
    // Every loop creates one file and deletes one unless the delete is skipped; at the end
    // each thread may be anywhere between its create and its delete.
    assert!(
        (creates - deletes - skipped).abs() <= 16,
        "{creates} creates, {deletes} deletes, {skipped} skipped"
    );
    // Skipped deletes are not operations and are counted apart from a missing file.
    assert_eq!(flowop(&v, "deletefile1")["no_resource"], 0);
    eprintln!("fileserver 2000/16: {creates} creates, {deletes} deletes, {skipped} skipped");
}

/// The buffer addresses of the 4 KiB `pread64` calls a run made, from `strace -e
/// raw=pread64` (arguments in hex). Err: "strace: ..." where strace cannot start, else the
/// failed run's output.
fn pread_buffers(
    d: &Scratch,
    tag: &str,
    workload: &str,
    extra: &[&str],
) -> Result<Vec<u64>, String> {
    let ext = if workload.starts_with('[') {
        "fio"
    } else {
        "f"
    };
    let wl = d.path().join(format!("{tag}.{ext}"));
    std::fs::write(&wl, workload).unwrap();
    let dir = d.path().join(tag);
    std::fs::create_dir(&dir).unwrap();
    let trace = d.path().join(format!("{tag}.strace"));
    let o = std::process::Command::new("strace")
        .args(["-f", "-e", "trace=pread64", "-e", "raw=pread64", "-o"])
        .arg(&trace)
        .arg(bin().get_program())
        .args([
            "run",
            wl.to_str().unwrap(),
            "--dir",
            dir.to_str().unwrap(),
            "-q",
        ])
        .args(extra)
        .output()
        .map_err(|e| format!("strace: {e}"))?;
    if !o.status.success() {
        return Err(text(&o));
    }
    let calls = std::fs::read_to_string(&trace).unwrap();
    // "pread64(0x5, 0x7f3c2a600010, 0x1000, 0x3000) = 0x1000", after a pid with -f.
    let bufs: Vec<u64> = calls
        .lines()
        .filter_map(|l| {
            let args = l.split_once("pread64(")?.1.split(')').next()?;
            let a: Vec<&str> = args.split(", ").collect();
            (a.len() == 4 && a[2] == "0x1000")
                .then(|| u64::from_str_radix(a[1].trim_start_matches("0x"), 16).unwrap())
        })
        .collect();
    assert!(
        bufs.len() >= 10,
        "{tag}: {} 4 KiB preads traced:\n{calls}",
        bufs.len()
    );
    Ok(bufs)
}

#[test]
fn read_buffers_start_where_filebench_s_do_unless_aligned_or_direct() {
    // Filebench takes a thread's I/O buffer from malloc(memsize), which glibc serves 16
    // bytes past a page boundary; on some processors a read into it costs several times an
    // aligned one's. fsbench places a Filebench flowop's buffer there by default, page-
    // aligned with --buffers aligned, and aligned for directio and for fio jobs always.
    if !have("strace") {
        skip("strace is not installed");
        return;
    }
    let d = Scratch::new("buffers");
    let wl = |attrs: &str| {
        format!(
            "set $dir=/tmp\ndefine file name=data,path=$dir,size=1m,prealloc\n\
             define process name=p {{\n  thread name=t,memsize=1m {{\n    \
             flowop read name=r4k,filename=data,iosize=4k,random{attrs}\n    \
             flowop finishoncount name=f,value=200\n  }}\n}}\nrun 5\n"
        )
    };
    let pages = |b: &[u64]| -> BTreeSet<u64> { b.iter().map(|a| a & 0xfff).collect() };
    let fb = match pread_buffers(&d, "default", &wl(""), &[]) {
        Ok(b) => b,
        Err(e) if e.starts_with("strace:") => {
            skip(&format!("strace cannot run here ({e})"));
            return;
        }
        Err(e) => panic!("default: {e}"),
    };
    assert_eq!(pages(&fb), [0x10].into(), "default: {fb:x?}");
    // memsize spreads the buffer over the thread's memory, as Filebench's random place.
    assert!(fb.iter().collect::<BTreeSet<_>>().len() > 1, "{fb:x?}");
    let aligned = pread_buffers(&d, "aligned", &wl(""), &["--buffers", "aligned"]).unwrap();
    assert_eq!(
        pages(&aligned),
        [0].into(),
        "--buffers aligned: {aligned:x?}"
    );
    let fio = pread_buffers(&d, "job", "[j]\nrw=randread\nbs=4k\nsize=256k\n", &[]).unwrap();
    assert_eq!(pages(&fio), [0].into(), "fio job: {fio:x?}");
    match pread_buffers(&d, "direct", &wl(",directio"), &[]) {
        Ok(direct) => assert_eq!(pages(&direct), [0].into(), "directio: {direct:x?}"),
        Err(e) if e.contains("O_DIRECT") || e.contains("Invalid argument") => {
            skip("directio part: O_DIRECT is refused under the temporary directory")
        }
        Err(e) => panic!("directio: {e}"),
    }
}
