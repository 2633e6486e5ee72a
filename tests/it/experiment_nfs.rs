//! The shipped plan `plans/nfs.toml` at its quick scale: FileMacro workloads and OLTP over
//! NFS (libnfs against NFS-Ganesha on an ext4 image) and on the same file system locally,
//! and the calls each fileserver flowop made, counted and over a dialled network. Needs
//! root, loop devices, NFS-Ganesha, rpcbind and libnfs; holds the NFS tests' lock.

use super::experiment::{factor_figure, shipped_plan_checked_at_quick_scale};
use std::path::Path;

/// Every run file of the experiment whose flowops carry counted calls.
fn runs_with_calls(out: &Path) -> Vec<serde_json::Value> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(out.join("runs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "json") {
            let r = super::common::json_of(&e.path());
            let counted = r["flowops"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f.get("rpcs").is_some()));
            if counted {
                v.push(r);
            }
        }
    }
    v
}

/// Calls per operation and mean time (µs) of `proc` in flowop `flowop` of run `r`.
fn calls(r: &serde_json::Value, flowop: &str, proc: &str) -> (f64, f64) {
    let f = crate::common::flowop(r, flowop);
    let c = (f["rpcs"].as_array().unwrap().iter())
        .find(|c| c["procedure"] == proc)
        .unwrap_or_else(|| panic!("{flowop} made no {proc}: {f}"));
    (
        c["per_op"].as_f64().unwrap(),
        c["mean_us"].as_f64().unwrap(),
    )
}

#[test]
fn shipped_plan_nfs_at_quick_scale() {
    let _serial = super::nfs_common::SERIAL
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let needs = ["ganesha.nfsd", "rpcbind", "nfs-ls"];
    shipped_plan_checked_at_quick_scale("nfs", &needs, |out| {
        for m in ["fileserver", "varmail", "webserver"] {
            for t in ["local", "nfs"] {
                let ops = factor_figure(out, m, t, "", "", "ops_per_s");
                assert!(ops > 0.0, "{m} on {t}: {ops}");
            }
        }
        for n in ["1", "8"] {
            for t in ["local", "nfs"] {
                let ops = factor_figure(out, "oltp", t, "nshadows", n, "ops_per_s");
                assert!(ops > 0.0, "oltp with {n} clients on {t}: {ops}");
            }
        }
        // The counted cell and the dialled one: one CREATE per createfile, a COMMIT per
        // close after writing; over 1 ms of round trip every LOOKUP takes at least that (the
        // relay holds each message half a round trip each way), whatever the machine's load.
        // Without the link a LOOKUP is far shorter on a quiet machine, but a loaded one has
        // made it take a millisecond too (1,068 µs in one whole-suite run), so the other
        // cell is only required to be faster than the dialled one.
        let runs = runs_with_calls(out);
        assert_eq!(runs.len(), 2, "the calls and link cells");
        for r in &runs {
            assert_eq!(calls(r, "createfile1", "CREATE").0, 1.0);
            assert_eq!(calls(r, "closefile1", "COMMIT").0, 1.0);
            assert!(calls(r, "readfile1", "READ").0 >= 1.0);
        }
        let lookups: Vec<f64> = runs
            .iter()
            .map(|r| calls(r, "statfile1", "LOOKUP").1)
            .collect();
        let (fast, slow) = (lookups[0].min(lookups[1]), lookups[0].max(lookups[1]));
        assert!(
            slow >= 1000.0 && fast < slow,
            "mean LOOKUP times (µs) without and with the 1-ms link: {lookups:?}"
        );
    });
}
