//! A plain-text account of what a workload will do: `fsbench check` prints it.

use super::{Action, Flowop, Num, Workload};
use std::fmt::Write;

use fsbench_base::units::human_bytes;

fn flowop_line(w: &Workload, f: &Flowop, indent: usize, out: &mut String) {
    let mut parts = Vec::new();
    if let Some(fs) = f.fileset {
        parts.push(format!("fileset={}", w.filesets[fs].name));
    }
    if let Some(fd) = f.fd {
        parts.push(format!("fd={fd}"));
    }
    if let Some(fd) = f.srcfd {
        parts.push(format!("srcfd={fd}"));
    }
    if f.iosize != Num::Const(0) {
        parts.push(format!("iosize={}", f.iosize.describe(&w.randvars)));
    }
    if f.workingset != Num::Const(0) {
        parts.push(format!("workingset={}", f.workingset.describe(&w.randvars)));
    }
    for (on, name) in [
        (f.random, "random"),
        (f.opennext, "opennext"),
        (f.dsync, "dsync"),
        (f.directio, "directio"),
        (f.noreadahead, "noreadahead"),
        (f.mmap, "mmap"),
        (f.sameoffset, "sameoffset"),
        (f.verify, "verify"),
        (f.blocking, "blocking"),
    ] {
        if on {
            parts.push(name.to_string());
        }
    }
    if let Some(i) = &f.indexed {
        parts.push(format!("indexed={}", i.describe(&w.randvars)));
    }
    if f.value != Num::Const(0) {
        parts.push(format!("value={}", f.value.describe(&w.randvars)));
    }
    if let Some(t) = &f.target {
        parts.push(format!("target={t}"));
    }
    if f.iters != Num::Const(1) {
        parts.push(format!("iters={}", f.iters.describe(&w.randvars)));
    }
    let kind = f.kind.name();
    let _ = writeln!(
        out,
        "{:indent$}{:<16} {:<14} {}",
        "",
        f.name,
        kind,
        parts.join(" "),
        indent = indent
    );
    for c in &f.children {
        flowop_line(w, c, indent + 2, out);
    }
}

/// Describe filesets, processes, flowops and run settings.
pub fn explain(w: &Workload) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "workload {} ({})", w.name, w.source.name);
    let _ = writeln!(out, "\nfilesets:");
    let mut total = 0.0;
    for fs in &w.filesets {
        let mean = fs.size.mean(&w.randvars);
        let pre = fs.entries as f64 * fs.prealloc as f64 / 100.0 * mean;
        total += pre;
        let _ = writeln!(
            out,
            "  {:<16} {} entries{}, dirwidth {}, size {}, prealloc {}% (~{}){}{}",
            fs.name,
            fs.entries,
            if fs.leafdirs > 0 {
                format!(" + {} leaf dirs", fs.leafdirs)
            } else {
                String::new()
            },
            fs.dirwidth,
            fs.size.describe(&w.randvars),
            fs.prealloc,
            human_bytes(pre),
            if fs.reuse { ", reuse" } else { "" },
            if fs.readonly {
                ", readonly"
            } else if fs.writeonly {
                ", writeonly"
            } else {
                ""
            },
        );
    }
    let _ = writeln!(out, "  total preallocated: ~{}", human_bytes(total));
    let _ = writeln!(
        out,
        "\nprocesses ({} in all):",
        fsbench_base::units::count(w.thread_count(), "thread")
    );
    for p in &w.processes {
        let _ = writeln!(out, "  {} x{}", p.name, p.instances);
        for t in &p.threads {
            let _ = writeln!(
                out,
                "    thread {} x{}{}",
                t.name,
                t.instances,
                if t.memsize > 0 {
                    format!(", memsize {}", human_bytes(t.memsize as f64))
                } else {
                    String::new()
                }
            );
            for f in &t.flowops {
                flowop_line(w, f, 6, &mut out);
            }
        }
    }
    let _ = writeln!(out, "\nrun:");
    let _ = writeln!(
        out,
        "  mode {}, duration {}",
        match w.mode {
            // As the workload language spells it (`set mode quit alldone`).
            super::QuitMode::Timeout => "timeout (ends at the run time)",
            super::QuitMode::AllDone => "quit alldone (ends when every thread has finished)",
            super::QuitMode::FirstDone => "quit firstdone (ends when the first thread finishes)",
        },
        match w.run_seconds {
            Some(s) => format!("{s} s"),
            None => "--duration (default 60 s)".into(),
        }
    );
    if let Some(r) = &w.eventgen_rate {
        let _ = writeln!(out, "  eventgen rate {} /s", r.describe(&w.randvars));
    }
    for a in &w.actions {
        if let Action::System(c) = a {
            let _ = writeln!(out, "  system \"{c}\" (runs only with --allow-system)");
        }
    }
    out
}
