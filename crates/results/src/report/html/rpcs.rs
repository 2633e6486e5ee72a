//! Over NFS with the relay: each flowop's calls per procedure, per configuration (a table,
//! shown only when some configuration counted calls).

use super::model::Group;
use super::{esc, g4};
use std::fmt::Write;

/// The table of calls per operation and their mean time, a row per configuration and
/// flowop, a column pair per procedure met.
pub(super) fn tables(out: &mut String, g: &Group) {
    let mut procs: Vec<&str> = Vec::new();
    for c in &g.configs {
        for f in &c.results.flowops {
            for r in &f.rpcs {
                if !procs.contains(&r.procedure.as_str()) {
                    procs.push(&r.procedure);
                }
            }
        }
    }
    if procs.is_empty() {
        return;
    }
    out.push_str("<h3>NFS calls per flowop operation (counted by the relay)</h3><table><tr><th>configuration</th><th>flowop</th>");
    for p in &procs {
        let _ = write!(out, "<th>{0} per op</th><th>{0} mean (ms)</th>", esc(p));
    }
    out.push_str("</tr>");
    for c in &g.configs {
        for f in c.results.flowops.iter().filter(|f| !f.rpcs.is_empty()) {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td>",
                esc(&c.label),
                esc(&f.name)
            );
            for p in &procs {
                match f.rpcs.iter().find(|r| r.procedure == *p) {
                    Some(r) => {
                        let _ = write!(
                            out,
                            "<td>{}</td><td>{}</td>",
                            g4(r.per_op),
                            g4(r.mean_us / 1e3)
                        );
                    }
                    None => out.push_str("<td></td><td></td>"),
                }
            }
            out.push_str("</tr>");
        }
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::super::model::{Config, Group};
    use crate::stats::rpcs::RpcResult;
    use crate::stats::{FlowopResult, Results};

    #[test]
    fn calls_show_per_configuration_and_flowop() {
        let flowop = |rpcs: Vec<RpcResult>| FlowopResult {
            name: "create".into(),
            rpcs,
            ..serde_json::from_value(serde_json::json!({
                "name": "create", "type": "createfile", "io_class": "meta", "ops": 4,
                "ops_per_s": 1.0, "bytes": 0, "mb_per_s": 0.0, "errors": 0, "no_resource": 0,
                "latency_us": {"mean": 1.0, "min": 1.0, "p50": 1.0, "p90": 1.0, "p95": 1.0,
                    "p99": 1.0, "p99_9": 1.0, "p99_99": 1.0, "max": 1.0}
            }))
            .unwrap()
        };
        let config = |label: &str, rpcs| Config {
            label: label.into(),
            results: Results {
                flowops: vec![flowop(rpcs)],
                ..Results::new("w", "w", 1, std::path::Path::new("/x"))
            },
            factors: Default::default(),
            note: None,
        };
        let create = RpcResult {
            procedure: "CREATE".into(),
            calls: 4,
            per_op: 1.0,
            mean_us: 2500.0,
            time_s: 0.01,
            bytes: 800,
        };
        let g = Group {
            workload: "w".into(),
            configs: vec![config("local", vec![]), config("nfs", vec![create])],
        };
        let mut out = String::new();
        super::tables(&mut out, &g);
        assert!(out.contains("<th>CREATE per op</th>"), "{out}");
        assert!(
            out.contains("<td>nfs</td><td>create</td><td>1.0000</td><td>2.5000</td>"),
            "{out}"
        );
        assert!(!out.contains("<td>local</td>"), "{out}");
        let mut none = String::new();
        super::tables(
            &mut none,
            &Group {
                workload: "w".into(),
                configs: vec![config("local", vec![])],
            },
        );
        assert!(none.is_empty());
    }
}
