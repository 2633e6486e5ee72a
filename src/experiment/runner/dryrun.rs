//! `fsbench experiment --dry-run`: the set-up steps and every cell's real command (its
//! `--cold`, its warm-up pass, its memory cgroup), and how long the runs should take.

use super::measure::memory_limit;
use super::*;

pub(super) fn print(plan: &Plan, cells: &[Cell], outdir: &Path) {
    crate::outln!(
        "experiment {} ({}): {} cells x {} repetitions = {} runs, order = \"{}\", fresh = \"{}\" ({}){}",
        plan.name,
        if plan.quick { "quick scale" } else { "full scale" },
        cells.len(),
        plan.repetitions,
        cells.len() as u64 * plan.repetitions as u64,
        plan.order.name(),
        plan.fresh.name(),
        match plan.fresh {
            Fresh::Experiment => "targets set up once",
            Fresh::Repetition => "targets set up again before each round",
        },
        if plan.warmup_runs > 0 { format!(", {} warm-up run(s) per cell", plan.warmup_runs) } else { String::new() }
    );
    if let Some(a) = plan.adaptive {
        crate::outln!(
            "adaptive repetitions: after {} rounds, more rounds of the cells whose first headline figure's 95% interval is wider than ±{}% of its mean, up to {} rounds ({} runs at most)",
            a.min,
            a.ci * 100.0,
            a.max,
            cells.len() as u64 * a.max as u64
        );
    }
    for line in super::published::dry_run_lines(plan, cells) {
        crate::outln!("{line}");
    }
    crate::outln!("\nset-up steps:");
    for t in plan.targets_in_setup_order() {
        for (s, root) in target::steps(t) {
            crate::outln!("  {:<12} {s}{}", t.name, if root { "  [root]" } else { "" });
        }
    }
    crate::outln!("\ncells:");
    for c in cells {
        crate::outln!("  {:>3}  {}", c.idx + 1, c.describe(plan));
        for line in cell_lines(plan, c) {
            crate::outln!("       {line}");
        }
    }
    estimate(plan, cells, outdir);
}

/// What the runner does for one run of a cell, in order.
fn cell_lines(plan: &Plan, c: &Cell) -> Vec<String> {
    let kind = plan.measurements[c.measurement].kind;
    let args = command(
        plan,
        c,
        Path::new("TARGET"),
        Path::new("RUN.json"),
        Path::new("OUTDIR/scratch"),
    );
    let cmd = format!("fsbench {}", args.join(" "));
    let mut v = Vec::new();
    let cg = memory_limit(plan, c).map(|l| {
        format!(
            " (in a memory cgroup limited to {})",
            crate::limits::human(l as f64)
        )
    });
    let cg = cg.unwrap_or_default();
    v.extend(background_lines(plan, c));
    match c.cache.as_str() {
        "warm" if !kind.takes_cold() => {
            v.push(format!("warm-up pass (unmeasured): {cmd}{cg}"));
            v.push(format!("measured: {cmd}{cg}"));
        }
        "warm" if kind == Kind::Workload && args.iter().any(|a| a == "--warmup") => {
            v.push(format!("{cmd}{cg}"));
            v.push("  (the child lays out its filesets, then runs --warmup seconds unmeasured before the measured window)".into());
        }
        "warm" => {
            v.push(format!("{cmd}{cg}"));
            v.push("  (the child runs the measurement once unmeasured first: --warmup 1)".into());
        }
        "cold" if !kind.takes_cold() => {
            v.push("sync; echo 3 > /proc/sys/vm/drop_caches (the runner)".into());
            v.push(format!("{cmd}{cg}"));
        }
        "cold" => {
            v.push(format!("{cmd}{cg}"));
            v.push("  (--cold: the child syncs and drops the caches after its preparation, right before measuring)".into());
        }
        _ => v.push(format!("{cmd}{cg}")),
    }
    v
}

/// The cell's backgrounds: each one's command, priority and when it stops.
fn background_lines(plan: &Plan, c: &Cell) -> Vec<String> {
    let mut v = Vec::new();
    for bg in super::background::of_cell(plan, c) {
        let json = format!("RUN-bg-{}.json", bg.name);
        let argv = super::background::argv(
            &bg,
            Path::new("TARGET"),
            Path::new(&json),
            Path::new("OUTDIR/scratch"),
        )
        .unwrap_or_default();
        let mut argv = argv.into_iter();
        let program = match &bg.kind {
            crate::experiment::plan::BgKind::Measure(_) => {
                argv.next();
                "fsbench".to_string()
            }
            _ => argv.next().unwrap_or_default(),
        };
        let rest: Vec<String> = argv.collect();
        v.push(format!(
            "background {} (in TARGET, {}): {program} {}",
            bg.name,
            super::background::priority_text(&bg),
            rest.join(" ")
        ));
        v.push(format!(
            "  (started before the measurement{}; {})",
            if matches!(&bg.kind, crate::experiment::plan::BgKind::Measure(m) if !matches!(m.kind, Kind::Scan | Kind::Layout)) {
                ", which waits until its measured window starts"
            } else {
                ""
            },
            match bg.stop {
                crate::experiment::plan::BgStop::After if bg.restart => {
                    "started again each time it ends; stopped with SIGINT after the measurement"
                }
                crate::experiment::plan::BgStop::After => "stopped with SIGINT after it",
                crate::experiment::plan::BgStop::End => "left to run to its end, within the time limit",
            }
        ));
    }
    v
}

/// Seconds per run of each cell: from runs stored earlier in `outdir` for the same plan, or
/// from the measurement's parameters.
fn estimate(plan: &Plan, cells: &[Cell], outdir: &Path) {
    let stored = stored_means(plan, outdir);
    let runs = (plan.repetitions + plan.warmup_runs) as f64;
    let (mut total, mut from_store, mut from_params, mut unknown) = (0.0, 0, 0, 0);
    for c in cells {
        if let Some(s) = stored.get(&c.idx) {
            total += s * runs;
            from_store += 1;
        } else if let Some(s) = from_parameters(plan, c) {
            total += s * runs;
            from_params += 1;
        } else {
            total += plan.time_limit_s * runs;
            unknown += 1;
        }
    }
    crate::outln!("\nestimated time: {}", fmt_secs(total));
    if from_store > 0 {
        crate::outln!(
            "  {from_store} cells from the mean of their runs stored in {}",
            outdir.join(crate::experiment::store::FILE).display()
        );
    }
    if from_params > 0 {
        crate::outln!("  {from_params} cells from their parameters (a workload's duration and warm-up; the others at rough rates of this machine class: PostMark 2,000 files or transactions/s, find 20,000 entries/s, read 200 MB/s, build and Andrew from their file counts and CPU time over this machine's cores, a build or read over a remote's generated tree also from its modelled network; twice for a warm cell's unmeasured pass)");
    }
    if unknown > 0 {
        crate::outln!(
            "  {unknown} cells at the time limit of {} per run (nothing to go by)",
            fmt_secs(plan.time_limit_s)
        );
    }
}

/// Mean seconds of the successful runs of each cell, stored by an earlier run of the same
/// plan (same text and scale) in `outdir`.
fn stored_means(plan: &Plan, outdir: &Path) -> std::collections::BTreeMap<usize, f64> {
    let mut out = std::collections::BTreeMap::new();
    let path = outdir.join(crate::experiment::store::FILE);
    if !path.is_file() {
        return out;
    }
    let Ok(db) =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return out;
    };
    let Ok(mut q) = db.prepare(
        "SELECT cells.idx, AVG(runs.elapsed_s) FROM runs JOIN cells ON cells.id = runs.cell_id \
         JOIN experiments ON experiments.id = cells.experiment_id \
         WHERE experiments.plan_hash = ?1 AND runs.status = 'ok' GROUP BY cells.idx",
    ) else {
        return out;
    };
    if let Ok(rows) = q.query_map([plan.hash()], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
    }) {
        for (i, s) in rows.flatten() {
            out.insert(i as usize, s);
        }
    }
    out
}

/// The files of the tree a find or read measurement of the plan makes at `m`'s path.
fn made_tree_files(plan: &Plan, m: &crate::experiment::plan::Measurement) -> Option<f64> {
    let path = m.params.iter().find(|(k, _)| k == "path")?.1.as_str();
    let maker = plan
        .measurements
        .iter()
        .find(|o| o.kind.makes_tree() && tree_dir_name(&o.name) == path)?;
    maker
        .params
        .iter()
        .find(|(k, _)| k == "tree_files")
        .and_then(|(_, v)| v.parse().ok())
}

/// A rough duration of one run of `c` from its parameters, when there is a basis for one.
fn from_parameters(plan: &Plan, c: &Cell) -> Option<f64> {
    let m = &plan.measurements[c.measurement];
    let get = |k: &str| -> Option<f64> {
        c.factors
            .iter()
            .chain(m.params.iter())
            .find(|(pk, _)| pk == k)
            .and_then(|(_, v)| crate::units::parse_size(v).ok().map(|b| b as f64))
    };
    let warm = if c.cache == "warm" { 2.0 } else { 1.0 };
    let s = match m.kind {
        Kind::Workload => {
            let d = get("duration")?;
            let w = match get("warmup") {
                Some(w) => w,
                None if c.cache == "warm" => workload_warmup_s(Some(d)),
                None => 0.0,
            };
            return Some(d + w);
        }
        Kind::Postmark => {
            let per = get("number").unwrap_or(500.0) + get("transactions").unwrap_or(500.0);
            per * get("instances").unwrap_or(1.0).max(1.0) / 2000.0
        }
        Kind::Find => get("tree_files")? / 20_000.0,
        Kind::Read => match remote_read(plan, c) {
            Some(s) => s,
            None => {
                let files = get("tree_files")?;
                files * get("tree_file_size").unwrap_or(4608.0) / 200e6 + files / 20_000.0
            }
        },
        Kind::Build => {
            // Jobs beyond the machine's cores do not compile faster.
            let cores = crate::walk::default_threads() as f64;
            match remote_build(plan, c) {
                Some((files, network_s)) => {
                    files * get("cpu_ms").unwrap_or(5.0) / 1000.0 + files / 2000.0 + network_s
                }
                None => {
                    let files = get("files").unwrap_or(200.0);
                    let jobs = get("jobs").unwrap_or(2.0).clamp(1.0, cores);
                    files * get("cpu_ms").unwrap_or(5.0) / 1000.0 / jobs + files / 2000.0
                }
            }
        }
        Kind::Andrew => {
            // Compiling is most of a copy's time; without it the copy, stat and scan of a
            // copy take a fraction of a second per `scale`.
            let compiles = !c
                .factors
                .iter()
                .chain(m.params.iter())
                .any(|(k, v)| k == "no_compile" && v == "true");
            let per_copy = if compiles {
                5.0
            } else {
                0.05 * get("scale").unwrap_or(1.0)
            };
            per_copy * get("copies").unwrap_or(1.0) * get("clients").unwrap_or(1.0)
        }
        // Writing its tree and scanning it, then deleting: rough rates of a small machine.
        Kind::Prune => get("files").unwrap_or(2000.0) / 1000.0,
        // A scan of a tree the plan makes: at find's rate.
        Kind::Scan => made_tree_files(plan, m)? / 20_000.0,
        Kind::Layout | Kind::Replay | Kind::Hot => return None,
    };
    Some(s * warm + 0.5)
}

/// A build of a remote target's generated tree (`src` on a `source` remote): its files and
/// the seconds the modelled network adds from a cold client cache. Per source, two round
/// trips (lookup, open), one more with a lookaside tree (the hash question), and one per
/// header it reads (a name looked up more than 3 s after the last time is looked up
/// again); then the bytes not in the lookaside tree (its bytes share, else its files
/// share) at the link's bandwidth. Compile CPU is not overlapped (one job). Headers count
/// as ~2 KiB each. Against runs at 100 kbit/s (60 sources, 5 headers each): 177 s
/// measured, 213 s estimated without lookaside.
fn remote_build(plan: &Plan, c: &Cell) -> Option<(f64, f64)> {
    let m = &plan.measurements[c.measurement];
    m.params.iter().find(|(k, _)| k == "src")?;
    let r = RemoteTree::of(plan, c)?;
    let (files, headers) = (r.spec.files as f64, r.spec.headers.max(1) as f64);
    let per_source = r.trips + r.spec.headers_per_job.min(r.spec.headers.max(1)) as f64;
    Some((
        files,
        files * per_source * r.rtt + headers * r.trips * r.rtt + r.transfer_s(),
    ))
}

/// `read` of a remote target's whole generated tree (`path = "."`): per file (sources and
/// headers) the round trips of [`remote_build`]'s sources without their headers, then the
/// bytes not in the lookaside tree at the link's bandwidth.
fn remote_read(plan: &Plan, c: &Cell) -> Option<f64> {
    let m = &plan.measurements[c.measurement];
    let path = m.params.iter().find(|(k, _)| k == "path")?;
    if path.1 != "." {
        return None;
    }
    let r = RemoteTree::of(plan, c)?;
    let files = (r.spec.files + r.spec.headers.max(1)) as f64;
    Some(files * r.trips * r.rtt + r.transfer_s())
}

/// A cell's remote target with a generated tree, and the network and lookaside it runs at.
struct RemoteTree {
    spec: crate::apps::build::TreeSpec,
    /// Bits per second and seconds.
    bw: f64,
    rtt: f64,
    /// Round trips per file and the share of the bytes that crosses the network.
    trips: f64,
    fetched: f64,
}

impl RemoteTree {
    fn of(plan: &Plan, c: &Cell) -> Option<RemoteTree> {
        use crate::experiment::plan::{Lookaside, RemoteServer, TargetKind};
        let t = plan.targets.iter().find(|t| t.name == c.target)?;
        let TargetKind::Remote {
            server: RemoteServer::Source(params),
            network,
            lookaside,
            ..
        } = &t.kind
        else {
            return None;
        };
        let level = |k: &str| {
            c.settings
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        };
        let network = level("network").unwrap_or_else(|| network.clone());
        let (bw, rtt) = match network.split_once('/') {
            Some((b, r)) => (
                crate::remote::model::parse_bandwidth(b).ok()?,
                crate::remote::model::parse_rtt(r).ok()?,
            ),
            None => {
                let n = crate::remote::model::Net::preset(&network)?;
                (n.bandwidth_bps, n.rtt_s)
            }
        };
        let la = match level("lookaside") {
            Some(l) => Lookaside::from_level(&l),
            None => lookaside.clone(),
        };
        let (trips, fetched) = match la {
            None => (2.0, 1.0),
            Some(Lookaside::Common(f, b)) => (3.0, 1.0 - b.unwrap_or(f)),
            Some(Lookaside::Dir(_)) => (3.0, 1.0),
        };
        Some(RemoteTree {
            spec: crate::apps::build::TreeSpec::with(params),
            bw,
            rtt,
            trips,
            fetched,
        })
    }

    /// The seconds the bytes not in the lookaside tree take at the link's bandwidth.
    fn transfer_s(&self) -> f64 {
        let bytes = self.spec.files as f64 * self.spec.source_size as f64
            + self.spec.headers.max(1) as f64 * 2048.0;
        bytes * self.fetched * 8.0 / self.bw
    }
}
