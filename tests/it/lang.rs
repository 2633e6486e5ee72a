//! The workload language through the real binary: the Filebench corpus, built-ins, and
//! malformed workloads rejected with the right file:line:column.

use crate::common::*;

#[test]
fn every_shipped_workload_checks_clean() {
    let Some(dir) = corpus() else {
        skip("../shared/filebench-workloads is not present");
        return;
    };
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "f") {
            continue;
        }
        n += 1;
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        let o = run(&["check", p.to_str().unwrap()]);
        let out = text(&o);
        assert!(!out.contains("panicked"), "{name}: {out}");
        // Every flowop type runs now (semaphores, rate limits and aio included).
        assert!(o.status.success(), "{name} should check clean: {out}");
    }
    assert_eq!(n, 47, "the corpus has 47 workloads");
}

#[test]
fn legacy_syntax_is_accepted_with_warnings() {
    let Some(dir) = corpus() else {
        skip("../shared/filebench-workloads is not present");
        return;
    };
    let o = run(&["check", dir.join("networkfs.f").to_str().unwrap()]);
    let out = text(&o);
    assert!(out.contains("`define randvar` is legacy syntax"), "{out}");
    assert!(out.contains("arithmetic is legacy syntax"), "{out}");
    assert!(out.contains("`cached` is legacy syntax"), "{out}");
    // 10000 * 10 files, as the legacy product says.
    assert!(out.contains("100000 entries"), "{out}");
    // Warnings name file:line:col like errors; one warning for every `useism`.
    let o = run(&["check", dir.join("oltp.f").to_str().unwrap()]);
    let out = text(&o);
    assert!(out.contains("oltp.f:49:42"), "{out}");
    assert!(out.contains("also on lines 61, 73"), "{out}");
}

#[test]
fn every_builtin_checks_and_is_listed() {
    let o = run(&["list"]);
    assert!(o.status.success());
    let listing = String::from_utf8_lossy(&o.stdout).to_string();
    for name in [
        "fileserver",
        "varmail",
        "webserver",
        "webproxy",
        "oltp",
        "videoserver",
        "networkfs",
        "mongo",
        "compflow",
        "filemicro_seqwrite",
        "fivestreamreaddirect",
    ] {
        assert!(listing.contains(name), "{name} missing from list");
        let o = run(&["check", name]);
        let out = text(&o);
        assert!(out.contains(&format!("workload {name}")), "{out}");
    }
    let o = run(&["show", "fileserver"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("$nfiles = 10000"), "{out}");
    assert!(out.starts_with("# fsbench: fileserver"));
}

#[test]
fn overrides_apply_and_unknown_ones_are_errors() {
    let o = run(&[
        "check",
        "fileserver",
        "-s",
        "nfiles=500",
        "-s",
        "nthreads=4",
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("500 entries"), "{out}");
    assert!(out.contains("4 threads in all"), "{out}");
    let o = run(&["check", "fileserver", "-s", "nfile=500"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("no variable `$nfile`"));
}

/// (workload text, expected "file:line:col", expected message fragment)
const BAD: &[(&str, &str, &str)] = &[
    ("define fileset name=a,path=/tmp,entries=10,dirwidth=3\ndefine process name=p {\n  thread name=t {\n    flowop reed name=x,filesetname=a\n  }\n}\n", ":4:12", "unknown flowop type `reed`"),
    ("set $a = 12x\n", ":1:10", "bad number"),
    ("echo \"unterminated\n", ":1:6", "unterminated quoted string"),
    ("define fileset name=a,path=/tmp,entries=10,dirwidht=3\n", ":1:44", "unknown attribute `dirwidht`"),
    ("define fileset name=a,path=$nodir,entries=10,dirwidth=3\n", ":1:28", "undefined variable `$nodir`"),
    ("define fileset name=a,path=/tmp,entries=10,dirwidth=3\ndefine process name=p {\n thread name=t {\n  flowop read name=r,fd=2,iosize=4k\n }\n}\n", ":4:3", "fd=2, which no flowop"),
    ("define fileset name=a,path=/tmp,entries=10,dirwidth=3\ndefine process name=p {\n thread name=t {\n  flowop openfile name=o,filesetname=b\n }\n}\n", ":4:26", "no fileset named `b`"),
    ("define fileset name=a,path=/tmp,entries=10,dirwidth=3\ndefine process name=p {\n thread name=t {\n  flowop closefile name=c,fd=1,iosize=4k\n }\n}\n", ":4:32", "does not take `iosize`"),
    ("set mode quit never\n", ":1:15", "unknown quit mode"),
    ("warmup 10\n", ":1:1", "not part of the workload language"),
    ("define process name=p {\n  flowop read name=r\n}\n", ":2:3", "expected `thread`"),
    ("set $r = randvar(type=tabular, randtable={{50,1,2},{40,3,4}})\n", ":1:43", "add up to 90"),
    ("set $c = cvar(type=cvar-gamma, parameters=mean:abc;gamma:1.5)\n", ":1:15", "mean"),
    ("define fileset name=a,path=/tmp,entries=10,dirwidth=3\ndefine process name=p {\n thread name=t {\n  flowop sempost name=s,value=1,target=ghost\n }\n}\n", ":4:3", "target `ghost`"),
    ("define fileset name=a,path=/tmp,entries=-5,dirwidth=3\n", ":1:33", "at least 0"),
];

#[test]
fn malformed_workloads_are_located() {
    let dir = Scratch::new("bad");
    for (i, (src, loc, msg)) in BAD.iter().enumerate() {
        let p = dir.path().join(format!("bad{i}.f"));
        std::fs::write(&p, src).unwrap();
        let o = run(&["check", p.to_str().unwrap()]);
        let out = text(&o);
        assert!(!o.status.success(), "case {i} must fail: {out}");
        let want = format!("{}{loc}", p.display());
        assert!(
            out.contains(&want),
            "case {i}: expected location {want}\n{out}"
        );
        assert!(out.contains(msg), "case {i}: expected `{msg}`\n{out}");
        assert!(out.contains('^'), "case {i}: no caret\n{out}");
    }
}

#[test]
fn missing_workload_is_a_clear_error() {
    let o = run(&["check", "no-such-personality"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("no workload file or built-in personality named"));
    let o = run(&["check", "/nonexistent/dir/x.f"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("cannot read /nonexistent/dir/x.f"));
}

#[test]
fn slot_uses_without_an_opening_flowop_are_caught() {
    let dir = Scratch::new("slots");
    let head = "define fileset name=fs,path=/tmp,entries=4,dirwidth=4,size=4k,prealloc\n\
                define fileset name=big,path=/tmp,entries=100,dirwidth=10,size=4k,prealloc\n";
    for (body, msg) in [
        // statfile with a fileset does not open slot 0, so the fsync has nothing to sync.
        (
            "flowop statfile name=st,filesetname=fs\n flowop fsync name=fs0",
            "fd=0, which no flowop",
        ),
        // closefile does not open slot 5.
        (
            "flowop closefile name=c,filesetname=fs,fd=5\n flowop read name=r,fd=5,iosize=4k",
            "fd=5, which no flowop",
        ),
        ("flowop statfile name=st,fd=0", "fd=0 and no fileset"),
        (
            "flowop appendfilerand name=a,filesetname=fs,iosize=8k,directio",
            "O_DIRECT refuses",
        ),
        (
            "flowop hog name=h,value=1,iters=-1",
            "iters cannot be negative",
        ),
    ] {
        let p = dir.path().join("s.f");
        std::fs::write(
            &p,
            format!("{head}define process name=p {{ thread name=t {{\n {body}\n}} }}\n"),
        )
        .unwrap();
        let o = run(&["check", p.to_str().unwrap()]);
        let out = text(&o);
        assert!(!o.status.success(), "{body}: {out}");
        assert!(out.contains(msg), "{body}: expected `{msg}`: {out}");
    }
    // An unknown fileset is one error, not two.
    let p = dir.path().join("one.f");
    std::fs::write(&p, format!("{head}define process name=p {{ thread name=t {{\n flowop read name=r,filesetname=nope,iosize=4k\n}} }}\n")).unwrap();
    let out = text(&run(&["check", p.to_str().unwrap()]));
    assert_eq!(out.matches("error:").count(), 1, "{out}");
}

#[test]
fn completions_and_man_pages_come_from_the_same_definitions() {
    let o = run(&["completions", "bash"]);
    assert!(o.status.success(), "{}", text(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("_fsbench()") && s.contains("postmark"), "{s}");
    let dir = Scratch::new("man");
    let o = run(&["man", dir.s()]);
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(dir.path().join("fsbench.1")).unwrap();
    assert!(page.contains(".TH fsbench 1"), "{page}");
    assert!(dir.path().join("fsbench-run.1").is_file());
    assert!(dir.path().join("fsbench-clean.1").is_file());
}

/// A workload of composite flowops `c0` .. `c{levels-1}`, each calling the next twice, the
/// last holding `leaf`; one thread calls `c0`.
fn nested_composites(levels: usize, leaf: &str) -> String {
    let mut w =
        String::from("define fileset name=fs,path=/tmp,entries=10,dirwidth=5,size=4k,prealloc\n");
    for i in 0..levels {
        let body = if i + 1 == levels {
            leaf.to_string()
        } else {
            format!("flowop c{n} name=a{i}\n  flowop c{n} name=b{i}", n = i + 1)
        };
        w.push_str(&format!("define flowop name=c{i} {{\n  {body}\n}}\n"));
    }
    w.push_str("define process name=p { thread name=t { flowop c0 name=top } }\nrun 1\n");
    w
}

#[test]
fn deep_composite_nesting_is_one_located_error() {
    let dir = Scratch::new("lang-nesting");
    let leaf = "flowop read name=r,filesetname=fs,iosize=4k";
    // 18 levels: the innermost call sits 17 deep. It was reported at each of its 131,072
    // expansions (21 MB of errors); now once, at the outermost call.
    let deep = dir.path().join("deep.f");
    std::fs::write(&deep, nested_composites(18, leaf)).unwrap();
    let o = run(&["check", deep.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.matches("error:").count(), 1, "{err}");
    assert!(
        err.contains("nests composite flowops more than 16 levels deep"),
        "{err}"
    );
    // The thread's call of c0: the last line but one, column 41.
    let line = nested_composites(18, leaf).lines().count() - 1;
    assert!(err.contains(&format!("deep.f:{line}:41")), "{err}");
    assert!(err.contains("deep.f has 1 error"), "{err}");
    // A composite calling itself.
    let own = dir.path().join("own.f");
    std::fs::write(
        &own,
        "define flowop name=x {\n  flowop x name=y\n}\ndefine process name=p { thread name=t { flowop x name=top } }\nrun 1\n",
    )
    .unwrap();
    let o = run(&["check", own.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("error:").count(), 1, "{err}");
    assert!(err.contains("own.f:4:41"), "{err}");
    // 17 levels (the innermost 16 deep) are allowed.
    let ok = dir.path().join("ok.f");
    std::fs::write(&ok, nested_composites(17, leaf)).unwrap();
    let o = run(&["check", ok.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn an_error_inside_a_composite_is_reported_once_for_all_its_calls() {
    let dir = Scratch::new("lang-dedupe");
    let w = dir.path().join("w.f");
    // 2^10 calls of the innermost composite, whose body names a missing fileset.
    std::fs::write(
        &w,
        nested_composites(11, "flowop read name=r,filesetname=nope,iosize=4k"),
    )
    .unwrap();
    let o = run(&["check", w.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("no fileset named `nope`").count(), 1, "{err}");
    assert!(err.contains("w.f has 1 error"), "{err}");
}
