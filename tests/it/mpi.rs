//! Many clients on MPI (built with `--features mpi`): `mpirun -np 4` on this machine runs a
//! workload and the metadata benchmark on every rank, rank 0 merges; the starts agree,
//! stonewalling stops every rank, a failing rank is reported with its rank and host and
//! the others stop cleanly, and nothing is left behind. Needs Open MPI's `mpirun`.
#![cfg(feature = "mpi")]

use crate::common::*;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

/// One mpirun at a time: four ranks already oversubscribe a small machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn mpirun(np: usize, args: &[&str], env: &[(&str, &str)]) -> Option<Output> {
    if Command::new("mpirun").arg("--version").output().is_err() {
        skip("needs Open MPI's mpirun (apt install openmpi-bin)");
        return None;
    }
    let mut c = Command::new("mpirun");
    c.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        &np.to_string(),
    ]);
    for (k, v) in env {
        c.env(k, v).args(["-x", k]);
    }
    c.arg(env!("CARGO_BIN_EXE_fsbench")).args(args);
    Some(c.output().expect("mpirun runs"))
}

fn shm(tag: &str) -> Scratch {
    let p = Path::new("/dev/shm").join(format!("fsbench-test-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&p).unwrap();
    Scratch(p)
}

fn left_in(dir: &Path, except: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != except)
        .collect()
}

#[test]
fn fileserver_on_four_ranks_merges_counts_and_starts_together() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = shm("mpi-fs");
    let json = s.path().join("r.json");
    let Some(o) = mpirun(
        4,
        &[
            "run",
            "fileserver",
            "-s",
            "nfiles=1000",
            "-s",
            "nthreads=1",
            "-s",
            "filesize=16k",
            "--duration",
            "2",
            "--dir",
            s.s(),
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    ) else {
        return;
    };
    assert!(o.status.success(), "{}", text(&o));
    let r = json_of(&json);
    let ranks = r["ranks"].as_array().expect("a ranks section");
    assert_eq!(ranks.len(), 4);
    let per_rank: u64 = ranks.iter().map(|x| x["ops"].as_u64().unwrap()).sum();
    assert_eq!(
        r["summary"]["ops"].as_u64().unwrap(),
        per_rank,
        "merged = sum of ranks"
    );
    let rows: u64 = r["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["io_class"] != "none")
        .map(|f| f["ops"].as_u64().unwrap())
        .sum();
    assert_eq!(
        rows, per_rank,
        "the merged rows add up to the ranks' summaries"
    );
    for (i, x) in ranks.iter().enumerate() {
        assert_eq!(x["rank"], i as u64);
        assert!(x["ops"].as_u64().unwrap() > 0, "rank {i} did nothing: {x}");
    }
    assert_eq!(r["hosts"].as_array().unwrap().len(), 1);
    let starts: Vec<f64> = ranks
        .iter()
        .map(|x| x["started_at"].as_f64().unwrap())
        .collect();
    let spread = starts.iter().cloned().fold(f64::MIN, f64::max)
        - starts.iter().cloned().fold(f64::MAX, f64::min);
    assert!(
        spread < 0.010,
        "starts {:.1} ms apart: {starts:?}",
        spread * 1e3
    );
    assert_eq!(
        left_in(s.path(), "r.json"),
        Vec::<String>::new(),
        "left behind"
    );
}

#[test]
fn stonewalling_stops_every_rank_when_the_first_finishes() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = shm("mpi-stone");
    let wl = s.path().join("count.f");
    std::fs::write(
        &wl,
        "set $dir=/tmp\n\
         define fileset name=f,path=$dir,entries=200,dirwidth=20,size=4k,prealloc\n\
         define process name=p,instances=1 {\n\
           thread name=t,instances=1 {\n\
             flowop statfile name=stat1,filesetname=f\n\
             flowop finishoncount name=finish,value=300000,target=stat1\n\
           }\n\
         }\n\
         run 60\n",
    )
    .unwrap();
    let run = |stonewall: bool| {
        let json = s.path().join(format!("r{stonewall}.json"));
        let mut args = vec![
            "run",
            wl.to_str().unwrap(),
            "--dir",
            s.s(),
            "--json",
            json.to_str().unwrap(),
        ];
        let o = if stonewall {
            args.push("--stonewall");
            // Rank 0 at the lowest priority: on a busy machine it is far behind when the
            // first of the others finishes.
            let bin = env!("CARGO_BIN_EXE_fsbench");
            let mut c = Command::new("mpirun");
            c.args([
                "--allow-run-as-root",
                "--oversubscribe",
                "-np",
                "1",
                "nice",
                "-n",
                "19",
                bin,
            ])
            .args(&args)
            .args([":", "-np", "3", bin])
            .args(&args);
            c.output().expect("mpirun runs")
        } else {
            mpirun(4, &args, &[])?
        };
        assert!(o.status.success(), "{}", text(&o));
        Some(json_of(&json))
    };
    // Without stonewalling every rank counts to the end.
    let Some(r) = run(false) else { return };
    for x in r["ranks"].as_array().unwrap() {
        assert_eq!(x["ops"], 300000, "{x}");
    }
    // With it, the first rank's finish stops the others where they are.
    let r = run(true).unwrap();
    let ranks = r["ranks"].as_array().unwrap();
    let ends: Vec<f64> = ranks
        .iter()
        .map(|x| x["started_at"].as_f64().unwrap() + x["duration_s"].as_f64().unwrap())
        .collect();
    let first = ends.iter().cloned().fold(f64::MAX, f64::min);
    for (x, e) in ranks.iter().zip(&ends) {
        assert!(
            e - first < 0.2,
            "rank {} ended {:.0} ms after the first",
            x["rank"],
            (e - first) * 1e3
        );
    }
    let stopped: Vec<&serde_json::Value> = ranks
        .iter()
        .filter(|x| x["ops"].as_u64().unwrap() < 300000)
        .collect();
    assert!(!stopped.is_empty(), "no rank was stopped early: {ranks:?}");
    for x in &stopped {
        assert!(
            x["notes"].to_string().contains("stonewalling"),
            "a stopped rank says why: {x}"
        );
    }
    assert_eq!(
        left_in(s.path(), "count.f").len(),
        2,
        "only the two result files are left"
    );
}

#[test]
fn a_failing_rank_is_named_and_the_others_stop_cleanly() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = shm("mpi-fail");
    let Some(o) = mpirun(
        4,
        &[
            "run",
            "fileserver",
            "-s",
            "nfiles=500",
            "-s",
            "nthreads=1",
            "--duration",
            "30",
            "--dir",
            s.s(),
        ],
        &[("FSBENCH_TEST_FAIL_RANK", "2")],
    ) else {
        return;
    };
    assert!(!o.status.success(), "{}", text(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    let host = run_ok("hostname", &[]).unwrap_or_default();
    assert!(
        e.contains("rank 2 on ") && e.contains("injected failure"),
        "{e}"
    );
    assert!(
        host.is_empty() || e.contains(&host) || e.contains("rank 2 on"),
        "{e}"
    );
    assert!(e.contains("1 rank of 4 failed"), "{e}");
    assert_eq!(left_in(s.path(), ""), Vec::<String>::new(), "left behind");
}

#[test]
fn mdtest_and_ior_on_four_ranks_merge_phase_by_phase() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = shm("mpi-md");
    let json = s.path().join("md.json");
    let Some(o) = mpirun(
        4,
        &[
            "mdtest",
            "-n",
            "300",
            "--shared-dir",
            "--dir",
            s.s(),
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    ) else {
        return;
    };
    assert!(o.status.success(), "{}", text(&o));
    let r = json_of(&json);
    let ranks = r["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 4);
    for f in r["flowops"].as_array().unwrap() {
        if f["name"] != "read" {
            assert_eq!(f["ops"], 4 * 300, "{f}");
            assert_eq!(f["errors"], 0, "{f}");
        }
    }
    let per_rank: u64 = ranks.iter().map(|x| x["ops"].as_u64().unwrap()).sum();
    assert_eq!(r["summary"]["ops"].as_u64().unwrap(), per_rank);
    assert!(r["figures"]["create_ops_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(
        left_in(s.path(), "md.json"),
        Vec::<String>::new(),
        "left behind"
    );
    let json = s.path().join("ior.json");
    let o = mpirun(
        4,
        &[
            "ior",
            "-b",
            "2M",
            "-t",
            "256K",
            "--shared-file",
            "-C",
            "--dir",
            s.s(),
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    )
    .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = json_of(&json);
    for f in r["flowops"].as_array().unwrap() {
        assert_eq!(f["bytes"], 4 * (2 << 20), "{f}");
    }
    assert_eq!(
        left_in(s.path(), "md.json").len(),
        1,
        "only the results are left"
    );
}

#[test]
fn a_workload_on_standard_input_runs_on_every_rank() {
    // mpirun gives standard input to rank 0 alone: the other ranks run the text rank 0 read.
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if Command::new("mpirun").arg("--version").output().is_err() {
        skip("needs Open MPI's mpirun (apt install openmpi-bin)");
        return;
    }
    let s = shm("mpi-stdin");
    let wl = s.path().join("stat.f");
    std::fs::write(
        &wl,
        "set $dir=/tmp\n\
         define fileset name=f,path=$dir,entries=20,dirwidth=20,size=4k,prealloc\n\
         define process name=p,instances=1 {\n\
           thread name=t,instances=1 {\n\
             flowop statfile name=stat1,filesetname=f\n\
             flowop finishoncount name=finish,value=2000,target=stat1\n\
           }\n\
         }\n\
         run 60\n",
    )
    .unwrap();
    let json = s.path().join("r.json");
    let o = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(env!("CARGO_BIN_EXE_fsbench"))
        .args(["run", "-", "--dir", s.s(), "--json"])
        .arg(&json)
        .stdin(std::fs::File::open(&wl).unwrap())
        .output()
        .expect("mpirun runs");
    assert!(o.status.success(), "{}", text(&o));
    let r = json_of(&json);
    let ranks = r["ranks"].as_array().expect("a ranks section");
    assert_eq!(ranks.len(), 2);
    for x in ranks {
        assert_eq!(
            x["ops"], 2000,
            "rank {} did not run the workload: {x}",
            x["rank"]
        );
    }
    assert_eq!(
        left_in(s.path(), "r.json"),
        vec!["stat.f".to_string()],
        "left behind"
    );
}

/// Each rank creates its own files through its own libnfs clients and relay; the merged
/// result counts every rank's calls.
const NFS_CREATES: &str = "\
define fileset name=fs,path=/tmp,entries=20,dirwidth=100,size=4k,prealloc=0
define process name=p,instances=1
{
  thread name=t,memsize=1m,instances=2
  {
    flowop createfile name=create,filesetname=fs,fd=1
    flowop closefile name=close,fd=1
  }
}
run 60
";

#[test]
fn nfs_clients_on_three_ranks_merge_their_operations_and_calls() {
    let Some(srv) = crate::nfs_common::Server::start(
        "nfs_clients_on_three_ranks_merge_their_operations_and_calls",
    ) else {
        return;
    };
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = shm("mpi-nfs");
    let (wl, json) = (s.path().join("creates.f"), s.path().join("r.json"));
    std::fs::write(&wl, NFS_CREATES).unwrap();
    let url = srv.url();
    let args = ["run", wl.to_str().unwrap(), "--nfs", &url, "--nfs-rpcs"];
    let Some(o) = mpirun(
        3,
        &[&args[..], &["--json", json.to_str().unwrap()]].concat(),
        &[],
    ) else {
        return;
    };
    assert!(o.status.success(), "{}", text(&o));
    let r = json_of(&json);
    let ranks = r["ranks"].as_array().expect("a ranks section");
    assert_eq!(ranks.len(), 3);
    // Every rank's two threads created the fileset's 20 files (each rank its own run
    // directory on the export), then ran out: 20 per rank.
    let create = r["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "create")
        .unwrap()
        .clone();
    assert_eq!(create["ops"].as_u64(), Some(60), "{create}");
    for x in ranks {
        // 20 creates and their closes (the last close may not have run when the other
        // thread found the fileset used up and ended the rank's run).
        assert!(
            x["ops"].as_u64().unwrap() >= 39,
            "a rank created and closed 20: {x}"
        );
        assert!(x["run_dir"].as_str().unwrap().starts_with("nfs://"), "{x}");
    }
    let calls = |p: &str| {
        (create["rpcs"].as_array().unwrap().iter())
            .find(|c| c["procedure"] == p)
            .map_or(0, |c| c["calls"].as_u64().unwrap())
    };
    assert_eq!(calls("CREATE"), 60, "{create}");
    // Three run directories on the export, each removed by its rank.
    let left: Vec<_> = std::fs::read_dir(srv.export()).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(
        left_in(s.path(), "r.json").len(),
        1,
        "only the workload beside the results"
    );
}
