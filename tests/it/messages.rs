//! What a new user trips on: each mistake gets a message that names the file (with line and
//! column) or the flag, and the real cause; refusals happen before anything is touched.

use crate::common::*;
use std::path::Path;

/// Run fsbench, expect exit status `code`, and return its standard error.
fn fails(args: &[&str], code: i32) -> String {
    let o = run(args);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn has(err: &str, what: &[&str]) {
    for w in what {
        assert!(err.contains(w), "the message says {w:?}: {err}");
    }
}

const FILESET: &str = "define fileset name=fs,path=/tmp,entries=10,dirwidth=10,size=4k,prealloc\n";

#[test]
fn a_stray_comma_is_pointed_at_with_its_line_and_column() {
    let d = Scratch::new("msg-comma");
    let f = d.path().join("comma.f");
    std::fs::write(
        &f,
        format!("{FILESET}define process name=p {{\n thread name=t {{\n  flowop write name=w,filesetname=fs,iosize=4k,\n  flowop appendfilerand name=a,filesetname=fs,iosize=4k\n }}\n}}\nrun 1\n"),
    )
    .unwrap();
    let err = fails(&["check", f.to_str().unwrap()], 1);
    has(
        &err,
        &[
            "attribute list ends with a comma",
            &format!("{}:4:47", f.display()),
        ],
    );
    assert!(!err.contains("found `appendfilerand`"), "{err}");
}

#[test]
fn zero_iosize_zero_iters_and_overflow_are_refused_at_check_time() {
    let d = Scratch::new("msg-zero");
    let cases = [
        (
            "iosize.f",
            format!("{FILESET}define process name=p {{ thread name=t {{\n flowop read name=r,filesetname=fs,iosize=0 }} }}\nrun 1\n"),
            ":3:36",
            "iosize=0",
        ),
        (
            "iters.f",
            format!("{FILESET}define process name=p {{ thread name=t {{\n flowop statfile name=s,filesetname=fs,iters=0 }} }}\nrun 1\n"),
            ":3:40",
            "iters=0",
        ),
        (
            "product.f",
            format!("set $a=4294967296\nset $b = $a * $a\n{FILESET}run 1\n"),
            ":2:10",
            "overflows",
        ),
    ];
    for (name, body, at, why) in cases {
        let f = d.path().join(name);
        std::fs::write(&f, body).unwrap();
        let fs = f.to_str().unwrap();
        let err = fails(&["check", fs], 1);
        has(&err, &[&format!("{fs}{at}"), why]);
        // `run` refuses it the same way, before laying anything out.
        let err = fails(&["run", fs, "--dir", d.s(), "--duration", "1"], 1);
        has(&err, &[&format!("{fs}{at}"), why]);
    }
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        3,
        "no run directory"
    );
}

#[test]
fn list_shows_a_random_variables_rounding_as_its_own() {
    let o = run(&["list"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("networkfs"))
        .nth(1)
        .expect("networkfs's variables");
    // Every space-separated name=value at depth 0 is a variable the workload sets.
    let mut depth = 0i32;
    let mut words = vec![String::new()];
    for c in line.trim().trim_start_matches("vars:").trim().chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ' ' if depth == 0 => {
                words.push(String::new());
                continue;
            }
            _ => {}
        }
        words.last_mut().unwrap().push(c);
    }
    let names: Vec<&str> = words.iter().map(|w| w.split('=').next().unwrap()).collect();
    assert!(
        !names.contains(&"round"),
        "round shown as a variable: {line}"
    );
    assert!(names.contains(&"wrtiosize"), "{line}");
    assert!(line.contains(", round=1024)"), "{line}");
}

#[test]
fn dir_that_is_a_file_is_called_a_file() {
    let d = Scratch::new("msg-dirfile");
    let f = d.path().join("afile");
    std::fs::write(&f, "").unwrap();
    let fs = f.to_str().unwrap();
    let err = fails(&["run", "fileserver", "--dir", fs, "-s", "nfiles=10"], 1);
    has(&err, &[fs, "is not a directory (it is a regular file)"]);
    assert!(!err.contains("does not exist"), "{err}");
    let err = fails(&["postmark", "--number", "10", "--dir", fs], 1);
    has(&err, &[fs, "is not a directory (it is a regular file)"]);
}

#[test]
fn experiment_output_that_is_a_file_is_named() {
    let d = Scratch::new("msg-outdir");
    let f = d.path().join("afile");
    std::fs::write(&f, "kept").unwrap();
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/filesystems.toml");
    let plan = plan.to_str().unwrap();
    let fs = f.to_str().unwrap();
    let err = fails(&["experiment", plan, "-o", fs, "--dry-run"], 2);
    has(&err, &["-o", fs, "is a regular file, not a directory"]);
    let below = format!("{fs}/sub");
    let err = fails(&["experiment", plan, "-o", &below, "--dry-run"], 2);
    has(&err, &[&below, "cannot be created", fs]);
    assert!(!err.contains("os error"), "{err}");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "kept");
}

#[test]
fn disk_image_must_be_a_regular_file_and_sizes_must_fit() {
    let d = Scratch::new("msg-disk");
    // A device that is not ours: refused by what it is, before it is opened (a usage error,
    // status 2: --image names something that cannot be an image).
    let err = fails(
        &[
            "disk",
            "create",
            "msgtest",
            "--image",
            "/dev/null",
            "--size",
            "32M",
        ],
        2,
    );
    has(
        &err,
        &[
            "--image /dev/null",
            "a character device, not a regular file",
        ],
    );
    let fifo = d.path().join("pipe.img");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let err = fails(
        &[
            "disk",
            "create",
            "msgtest",
            "--image",
            fifo.to_str().unwrap(),
        ],
        2,
    );
    has(&err, &["a FIFO, not a regular file"]);
    // A block device node (made here; if a regression opened it, its loop minor is unbound).
    if is_root() {
        let blk = d.path().join("blk.img");
        let c = std::ffi::CString::new(blk.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        let made = unsafe { libc::mknod(c.as_ptr(), libc::S_IFBLK | 0o600, libc::makedev(7, 250)) };
        assert_eq!(made, 0);
        let err = fails(
            &[
                "disk",
                "create",
                "msgtest",
                "--image",
                blk.to_str().unwrap(),
                "--size",
                "32M",
            ],
            2,
        );
        has(&err, &["a block device, not a regular file"]);
    } else {
        skip("needs root to make a block device node (the /dev/null and FIFO cases ran)");
    }
    let err = fails(&["disk", "create", "msgtest", "--size", "16777216T"], 2);
    has(&err, &["--size", "too large", "18446744073709551615"]);
    assert!(!err.contains("at least 1 MiB"), "{err}");
    // Sizes that parse but no file can have: refused with --size, no image left behind.
    let img = d.path().join("big.img");
    let i = img.to_str().unwrap();
    let err = fails(
        &[
            "disk",
            "create",
            "msgtest",
            "--image",
            i,
            "--size",
            "16777215T",
        ],
        2,
    );
    has(&err, &["--size", "too large", "9223372036854775807"]);
    // ext4 holds files of at most 16 TiB (elsewhere such a sparse file may be made, and
    // the disk with it: not tried there).
    let c = std::ffi::CString::new(d.s()).unwrap();
    // SAFETY: a valid C string and a zeroed statfs to fill.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let ext4 = unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0 && st.f_type == 0xEF53;
    if ext4 {
        let err = fails(
            &[
                "disk", "create", "msgtest", "--image", i, "--size", "1000000T",
            ],
            1,
        );
        has(&err, &["--size", i, "cannot be that large"]);
        assert!(!img.exists(), "the image it created is removed again");
    } else {
        skip("the scratch directory is not on ext4 (a 1 EiB sparse image is tried only there)");
    }
}

#[test]
fn build_jobs_beyond_the_machine_blame_j() {
    let d = Scratch::new("msg-build");
    let err = fails(&["build", "-j", "100000000", "--dir", d.s()], 1);
    has(&err, &["-j 100000000", "threads", "at most"]);
    assert!(!err.contains("--source-size"), "{err}");
}

#[test]
fn postmark_settings_too_large_say_the_largest() {
    let d = Scratch::new("msg-pm");
    let cfg = d.path().join("pm.cfg");
    std::fs::write(&cfg, "set size 500 1000\nset number 99999999999999\nrun\n").unwrap();
    let c = cfg.to_str().unwrap();
    let err = fails(&["postmark", c, "--dir", d.s()], 1);
    has(
        &err,
        &[&format!("{c}:2"), "too large", "the largest is 4294967295"],
    );
}

#[test]
fn a_truncated_trace_names_the_file_and_where_it_ends() {
    let d = Scratch::new("msg-trace");
    let head = d.path().join("head.trace");
    std::fs::write(&head, b"FSBTRACE\x01\x00").unwrap();
    let h = head.to_str().unwrap();
    let err = fails(&["trace", "stats", h], 1);
    has(&err, &[h, "cut short", "byte 12"]);
    assert!(!err.contains("failed to fill whole buffer"), "{err}");
    let whole = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/lookaside-build-quick.trace"),
    )
    .unwrap();
    let mid = d.path().join("mid.trace");
    std::fs::write(&mid, &whole[..whole.len() / 2]).unwrap();
    let m = mid.to_str().unwrap();
    let err = fails(&["trace", "stats", m], 1);
    has(
        &err,
        &[
            m,
            &format!("cut short at byte {}", whole.len() / 2),
            "records",
        ],
    );
}

/// A directory marked as fsbench's, with `mode`.
fn marked(parent: &Path, name: &str, mode: u32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = parent.join(name);
    std::fs::create_dir(&p).unwrap();
    std::fs::write(
        p.join(".fsbench-run"),
        "fsbench run directory\npid 1\nversion 0\n",
    )
    .unwrap();
    std::fs::write(p.join("data"), "x").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

#[test]
fn clean_dry_run_lists_what_clean_removes_and_why_it_keeps_the_rest() {
    use std::os::unix::fs::PermissionsExt;
    let d = Scratch::new("msg-clean");
    let ok = marked(d.path(), "fsbench-ok", 0o700);
    let open = marked(d.path(), "fsbench-open", 0o777);
    let o = run(&["clean", d.s(), "--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!("would remove {}", ok.display())),
        "{out}"
    );
    assert!(
        !out.contains(&format!("would remove {}", open.display())),
        "{out}"
    );
    assert!(
        out.contains(&format!("would keep {}", open.display()))
            && out.contains("writable by group or others"),
        "{out}"
    );
    // The dry run touched nothing (no lock file either).
    for p in [&ok, &open] {
        let mut names: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, [".fsbench-run", "data"], "{}", p.display());
    }
    // And `clean` does what the dry run said.
    let o = run(&["clean", d.s()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!ok.exists(), "{}", text(&o));
    assert!(open.exists(), "{}", text(&o));
    assert!(
        out.contains(&format!("NOT removed {}", open.display())),
        "{out}"
    );
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// The bytes of `p`, to show a command left it as it was.
fn bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

#[test]
fn results_and_report_of_a_database_without_an_experiment_leave_it_alone() {
    let d = Scratch::new("msg-db");
    // An empty file named results.db.
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let db = empty.join("results.db");
    std::fs::write(&db, "").unwrap();
    let e = empty.to_str().unwrap();
    let html = d.path().join("r.html");
    let h = html.to_str().unwrap();
    for args in [vec!["results", e], vec!["report", e, "-o", h]] {
        let err = fails(&args, 1);
        has(&err, &[db.to_str().unwrap(), "holds no experiment"]);
        assert_eq!(
            std::fs::metadata(&db).unwrap().len(),
            0,
            "{args:?} wrote into it"
        );
    }
    // Another program's database.
    let foreign = d.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    let db = foreign.join("results.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE scores (name TEXT, score REAL); INSERT INTO scores VALUES ('a', 1.0);",
        )
        .unwrap();
    }
    let before = bytes(&db);
    let f = foreign.to_str().unwrap();
    for args in [vec!["results", f], vec!["report", f, "-o", h]] {
        let err = fails(&args, 1);
        has(
            &err,
            &[db.to_str().unwrap(), "holds no experiment", "scores"],
        );
        assert_eq!(bytes(&db), before, "{args:?} changed it");
    }
    assert!(!html.exists(), "no report of nothing");
    let names: Vec<String> = std::fs::read_dir(&foreign)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["results.db"], "no journal or WAL left beside it");
}

#[test]
fn markdown_names_cannot_break_the_table() {
    let d = Scratch::new("msg-md");
    let f = d.path().join("md.f");
    std::fs::write(
        &f,
        format!("{FILESET}define process name=p {{ thread name=t {{ flowop statfile name=\"st|a<b>\",filesetname=fs }} }}\nrun 1\n"),
    )
    .unwrap();
    let o = run(&[
        "run",
        f.to_str().unwrap(),
        "--dir",
        d.s(),
        "--markdown",
        "-",
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let row = out
        .lines()
        .find(|l| l.contains("statfile"))
        .expect("the flowop's row");
    assert!(row.starts_with("| st\\|a&lt;b&gt; | statfile |"), "{row}");
    // Every table row has the header's number of cells.
    let cells = |l: &str| l.replace("\\|", "").matches('|').count();
    let header = out.lines().find(|l| l.starts_with("| flowop")).unwrap();
    assert_eq!(cells(row), cells(header), "{out}");
}

/// A database from before run flags (no `runs.flags_json`) is read as it is: `results`
/// and `report` work and leave it byte for byte (the migration is for runs that write).
#[test]
fn results_and_report_read_an_older_database_without_changing_it() {
    let d = Scratch::new("msg-olddb");
    let target = d.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let plan = d.path().join("p.toml");
    std::fs::write(
        &plan,
        format!(
            "[experiment]\nname = \"old\"\nrepetitions = 1\n\n[[target]]\nname = \"here\"\nkind = \"dir\"\npath = \"{}\"\n\n[[measurement]]\nname = \"walk\"\nkind = \"find\"\nparams = {{ tree_files = 20, tree_dirs = 2 }}\n",
            target.display()
        ),
    )
    .unwrap();
    let out = d.path().join("out");
    experiment_ok(&plan, &out);
    let db = out.join("results.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch("ALTER TABLE runs DROP COLUMN flags_json")
            .unwrap();
    }
    let before = bytes(&db);
    let o = run(&["results", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("walk"),
        "{}",
        text(&o)
    );
    let html = d.path().join("r.html");
    let o = run(&[
        "report",
        out.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(bytes(&db), before, "results or report changed the database");
    let c = rusqlite::Connection::open(&db).unwrap();
    assert!(
        c.prepare("SELECT flags_json FROM runs").is_err(),
        "the column was added"
    );
}

/// A fileset named `../x` or `/abs` (written, through a variable, or through `-s`) is a
/// directory outside the run directory: `check` refuses it at the name's line and column.
#[test]
fn a_fileset_name_leaving_the_run_directory_is_refused_at_its_place() {
    let d = Scratch::new("msg-fsname");
    let body = "\ndefine process name=p { thread name=t { flowop openfile name=o,filesetname=$n,fd=1\nflowop closefile name=c,fd=1 } }\nrun 1\n";
    for (name, given) in [("../x", "\"../x\""), ("/abs", "\"/abs\""), ("..", "\"..\"")] {
        let w = d.path().join("w.f");
        let text = format!(
            "set $n={given}\ndefine fileset name=$n,path=/tmp,entries=10,dirwidth=10,size=4k{body}"
        );
        std::fs::write(&w, text).unwrap();
        let ws = w.to_str().unwrap();
        let err = fails(&["check", ws], 1);
        has(
            &err,
            &[&format!("{ws}:2:21"), &format!("fileset name `{name}`")],
        );
        // As written, in place.
        let text =
            format!("define fileset name={given},path=/tmp,entries=10,dirwidth=10,size=4k{body}")
                .replace("filesetname=$n", &format!("filesetname={given}"));
        std::fs::write(&w, text).unwrap();
        let err = fails(&["check", ws], 1);
        has(
            &err,
            &[&format!("{ws}:1:21"), &format!("fileset name `{name}`")],
        );
    }
    // Through -s: the place is where the variable is used.
    let w = d.path().join("s.f");
    std::fs::write(
        &w,
        format!(
            "set $n=\"ok\"\ndefine fileset name=$n,path=/tmp,entries=10,dirwidth=10,size=4k{body}"
        ),
    )
    .unwrap();
    let ws = w.to_str().unwrap();
    for v in ["n=../x", "n=/abs"] {
        let err = fails(&["check", ws, "-s", v], 1);
        has(&err, &[&format!("{ws}:2:21"), "must be a plain file name"]);
        let err = fails(
            &["run", ws, "-s", v, "--dir", d.s(), "--duration", "0.2"],
            1,
        );
        has(&err, &[&format!("{ws}:2:21"), "must be a plain file name"]);
    }
}

/// A stored name holding terminal escapes (`ESC ] 0 ; ... BEL` retitles the window, `ESC [
/// 2 J` clears it) reached the terminal as it was: `results` now shows every control
/// character as an escape, in its text and its exports to standard output.
#[test]
fn results_show_stored_control_characters_as_escapes() {
    let d = Scratch::new("msg-escapes");
    let plan = d.path().join("p.toml");
    std::fs::write(
        &plan,
        format!(
            "[experiment]\nname = \"esc\"\nrepetitions = 1\n\n[[target]]\nname = \"here\"\nkind = \"dir\"\npath = \"{}\"\n\n[[measurement]]\nname = \"walk\"\nkind = \"find\"\nparams = {{ tree_files = 20, tree_dirs = 2 }}\n",
            d.s()
        ),
    )
    .unwrap();
    let out = d.path().join("out");
    let o = run(&[
        "experiment",
        plan.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let db = rusqlite::Connection::open(out.join("results.db")).unwrap();
    let evil = "x\u{1b}]0;owned\u{7}\u{1b}[2J\ry\u{9b}31m\u{202e}z";
    db.execute("UPDATE experiments SET name = ?1", [evil])
        .unwrap();
    db.execute("UPDATE cells SET target = ?1, measurement = ?1", [evil])
        .unwrap();
    let factors = serde_json::json!({"cache": "warm", "measurement": evil, "target": evil});
    db.execute("UPDATE cells SET factors_json = ?1", [factors.to_string()])
        .unwrap();
    drop(db);
    let o_text = out.to_str().unwrap();
    for args in [
        &["results", o_text][..],
        &["results", o_text, "--all"],
        &["results", o_text, "--csv", "-"],
        &["results", o_text, "--markdown", "-"],
    ] {
        let o = run(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o));
        let all = [o.stdout.as_slice(), o.stderr.as_slice()].concat();
        let shown = String::from_utf8_lossy(&all);
        assert!(
            !all.iter().any(|b| *b == 0x1b || *b == b'\r' || *b == 0x07)
                && !shown.contains('\u{9b}')
                && !shown.contains('\u{202e}'),
            "{args:?}: a control character reached the terminal: {shown:?}"
        );
        assert!(shown.contains("\\x1b]0;owned\\x07"), "{args:?}: {shown}");
    }
}

/// `--really-delete-under /` was accepted: a snapshot of the whole machine could then delete
/// anything in it. `/` and the system's directories are refused before the snapshot is read.
#[test]
fn prune_refuses_to_delete_under_the_root_or_system_directories() {
    let d = Scratch::new("msg-prune-root");
    let snap = d.path().join("none.snap");
    let s = snap.to_str().unwrap();
    for (dir, what) in [
        ("/", "the root directory"),
        ("/etc", "system configuration"),
        ("/usr/lib", "installed software"),
    ] {
        let err = fails(
            &["prune", s, "--free", "1M", "--really-delete-under", dir],
            1,
        );
        has(
            &err,
            &["--really-delete-under", dir, what, "deletes nothing"],
        );
        assert!(
            !err.contains("none.snap"),
            "refused before the snapshot is read: {err}"
        );
    }
}

#[test]
fn a_misspelt_built_in_gets_a_did_you_mean() {
    let err = fails(&["run", "fileservr", "--duration", "1"], 1);
    has(&err, &["`fileservr`", "did you mean `fileserver`?"]);
    // A name close to none gets no guess.
    let err = fails(&["check", "zzzzqqq"], 1);
    assert!(!err.contains("did you mean"), "{err}");
}

#[test]
fn a_wrong_value_given_with_s_is_pointed_at_on_the_command_line() {
    let err = fails(&["check", "varmail", "-s", "nthreads=abc"], 1);
    has(
        &err,
        &[
            "<command line>:1:13",
            "-s nthreads=abc",
            "`$nthreads` is used at builtin:varmail:",
            "instances=$nthreads",
        ],
    );
    // Errors that do not come from a `-s` value stay in the workload.
    let d = Scratch::new("msg-s-elsewhere");
    let f = d.path().join("w.f");
    std::fs::write(
        &f,
        format!("set $n=2\n{FILESET}define process name=p,instances=x {{\n thread name=t {{\n  flowop read name=r,filesetname=fs,iosize=4k\n }}\n}}\nrun 1\n"),
    )
    .unwrap();
    let err = fails(&["check", f.to_str().unwrap(), "-s", "n=abc"], 1);
    assert!(!err.contains("<command line>"), "{err}");
}
