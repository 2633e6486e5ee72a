//! Builds and reads over a simulated remote's generated tree: the round trips and bytes its
//! modelled network adds from a cold client cache.

use super::super::Cell;
use super::rates::cpu;
use crate::experiment::plan::Plan;

/// Each file reached through the simulated remote's FUSE server (lookups, open, reads,
/// release) besides the modelled network: the lookaside plan's quick 100 Mbit/s cells took
/// 0.33 to 0.5 s a run (debug, quiet machine, 20 to 24 files, the child, its cache drop and
/// the runner included), 0.05 to 0.1 s of it modelled.
const FUSE_FILE_S: f64 = 1.5e-3;

/// A build of a remote target's generated tree (`src` on a `source` remote): its files and
/// the seconds the modelled network adds from a cold client cache. Per source, two round
/// trips (lookup, open), one more with a lookaside tree (the hash question), and one per
/// header it reads (a name looked up more than 3 s after the last time is looked up
/// again); then the bytes not in the lookaside tree (its bytes share, else its files
/// share) at the link's bandwidth (the bytes of the tree as the seed generates it). Compile
/// CPU is not overlapped (one job). Against runs at 100 kbit/s (60 sources, 5 headers each): 177 s
/// measured, 213 s estimated without lookaside.
pub(super) fn remote_build(plan: &Plan, c: &Cell) -> Option<(f64, f64)> {
    let m = &plan.measurements[c.measurement];
    m.params.iter().find(|(k, _)| k == "src")?;
    build_reads(plan, c)
}

/// A replay over a remote target's generated tree (`over = "."`) of a build's traced
/// calls: the build's reads of [`remote_build`], without its compiles. Against the
/// lookaside plan's quick runs (20 sources at 1 Mbit/s): 3.2-4.7 s measured, 5.7-6.8 s
/// estimated (the recorded build looked each header up less often than this counts).
pub(super) fn remote_replay(plan: &Plan, c: &Cell) -> Option<f64> {
    let m = &plan.measurements[c.measurement];
    let over = m.params.iter().find(|(k, _)| k == "over")?;
    if over.1 != "." {
        return None;
    }
    build_reads(plan, c).map(|(_, s)| s)
}

/// The files of a remote target's generated tree and the seconds a build's reads of it
/// take over the modelled network from a cold client cache.
fn build_reads(plan: &Plan, c: &Cell) -> Option<(f64, f64)> {
    let r = RemoteTree::of(plan, c)?;
    let (files, headers) = (r.spec.files as f64, r.spec.headers.max(1) as f64);
    let per_source = r.trips + r.spec.headers_per_job.min(r.spec.headers.max(1)) as f64;
    Some((
        files,
        files * per_source * r.rtt
            + headers * r.trips * r.rtt
            + r.transfer_s()
            + cpu((files + headers) * FUSE_FILE_S),
    ))
}

/// `read` of a remote target's whole generated tree (`path = "."`): per file (sources and
/// headers) the round trips of [`remote_build`]'s sources without their headers, then the
/// bytes not in the lookaside tree at the link's bandwidth.
pub(super) fn remote_read(plan: &Plan, c: &Cell) -> Option<f64> {
    let m = &plan.measurements[c.measurement];
    let path = m.params.iter().find(|(k, _)| k == "path")?;
    if path.1 != "." {
        return None;
    }
    let r = RemoteTree::of(plan, c)?;
    let files = (r.spec.files + r.spec.headers.max(1)) as f64;
    Some(files * r.trips * r.rtt + r.transfer_s() + cpu(files * FUSE_FILE_S))
}

/// A cell's remote target with a generated tree, and the network and lookaside it runs at.
struct RemoteTree {
    spec: fsbench_tools::apps::build::TreeSpec,
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
                fsbench_base::units::parse_bandwidth(b).ok()?,
                fsbench_base::units::parse_rtt(r).ok()?,
            ),
            None => {
                let n = fsbench_tools::remote::model::Net::preset(&network)?;
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
            spec: fsbench_tools::apps::build::TreeSpec::with(params),
            bw,
            rtt,
            trips,
            fetched,
        })
    }

    /// The seconds the bytes not in the lookaside tree take at the link's bandwidth: the
    /// bytes the seed's tree holds as generated, not its nominal size (the lookaside plan's
    /// 32 chunks of 256 KiB mean are 10.9 MiB, and its 100 kbit/s resume without lookaside,
    /// 958 s a run, was estimated at 691 s from 8 MiB).
    fn transfer_s(&self) -> f64 {
        generated_bytes(&self.spec) as f64 * self.fetched * 8.0 / self.bw
    }
}

/// [`fsbench_tools::apps::build::TreeSpec::bytes`], drawn once per tree for all the cells that read it.
fn generated_bytes(spec: &fsbench_tools::apps::build::TreeSpec) -> u64 {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Drawn = HashMap<fsbench_tools::apps::build::TreeSpec, u64>;
    static DRAWN: OnceLock<Mutex<Drawn>> = OnceLock::new();
    let mut m = DRAWN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    *m.entry(spec.clone()).or_insert_with(|| spec.bytes())
}
