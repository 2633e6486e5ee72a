//! The experiment plan: a TOML file, typed and validated before anything runs.
//!
//! Parsing goes through serde with `deny_unknown_fields` everywhere, so a key this version
//! does not implement is an error naming the file, line and column, never a setting
//! silently ignored. Values that need more than their type (a target kind's own keys, a
//! factor's levels, a workload's variables) are checked afterwards with the spans `toml`
//! keeps, and refused the same way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A plan error with its place in the file.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

/// Line and column (1-based) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

pub mod age;
mod background;
mod check;
mod factors;
mod header;
mod kinds;
mod levels;
mod measurements;
pub mod memory;
pub mod published;
pub mod schedulers;
mod schema;
mod targets;

pub use background::{Background, BgKind, BgStop, IoPrio};
pub(crate) use check::scalar as level_text;
pub use kinds::{Arg, Kind, Param, Ty, NFS_URL};
use published::Published;

/// Plan-wide factors over a remote target's settings, applied with `fsbench remote set`.
pub const REMOTE_FACTORS: [&str; 2] = ["network", "lookaside"];

/// Plan-wide factors over device settings, in the order cells list them.
pub const SETTING_FACTORS: [&str; 5] = [
    "device",
    "scheduler",
    "read_ahead_kb",
    "nr_requests",
    "rotational",
];

/// Adaptive repetitions (`repetitions = { min, max, ci }`): rounds go on past `min` until
/// every cell's first headline figure has a 95% half-width within `ci` of its mean, or `max`
/// rounds have run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Adaptive {
    pub min: u32,
    pub max: u32,
    pub ci: f64,
}

/// Order of the cells within each repetition round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Order {
    /// Declaration order, rotated by one cell each round.
    Interleaved,
    /// A fresh permutation per round from the plan's seed.
    Random,
}

/// When targets are built anew.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Fresh {
    /// Set up once, measured in by every repetition.
    Experiment,
    /// Torn down and set up again before every repetition round.
    Repetition,
}

impl Order {
    /// As the plan spells it (`order = "random"`).
    pub fn name(self) -> &'static str {
        match self {
            Order::Interleaved => "interleaved",
            Order::Random => "random",
        }
    }
}

impl Fresh {
    /// As the plan spells it (`fresh = "experiment"`).
    pub fn name(self) -> &'static str {
        match self {
            Fresh::Experiment => "experiment",
            Fresh::Repetition => "repetition",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum AgePer {
    Target,
    Repetition,
}

/// A target's aging step (see [`age`]).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Age {
    /// `fsbench age`'s options by plan key, as the command line takes them (quick scale
    /// applied).
    pub args: Vec<(String, String)>,
    pub per: AgePer,
    /// A real tree the runner scans (read only) to age towards its population.
    pub from_scan: Option<std::path::PathBuf>,
}

/// The read-ahead fsbench sets on the devices it makes when the plan names none. The
/// kernel derives a loop device's from the device under its backing file when it is
/// attached (2,560 KiB for an image or a simulated disk on this machine, 8,192 for its
/// virtio disk), so a target's would depend on the host; 128 KiB is the kernel's
/// long-standing default for a disk, and the read-ahead of the studies' time.
pub const DEFAULT_READ_AHEAD_KB: u64 = 128;

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Device {
    pub scheduler: Option<String>,
    /// Scheduler tunables, written under queue/iosched/ after the scheduler.
    pub tunables: Vec<(String, String)>,
    pub read_ahead_kb: Option<u64>,
    pub nr_requests: Option<u64>,
    pub rotational: Option<bool>,
}

impl Device {
    pub fn is_empty(&self) -> bool {
        self.scheduler.is_none()
            && self.tunables.is_empty()
            && self.read_ahead_kb.is_none()
            && self.nr_requests.is_none()
            && self.rotational.is_none()
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub enum TargetKind {
    /// An existing directory: nothing set up, nothing destroyed.
    Dir { path: PathBuf },
    /// A loop-mounted image file under OUTDIR.
    Image {
        size: u64,
        fs: String,
        mkfs_options: Vec<String>,
        mount_options: String,
    },
    /// overlayfs whose lower, upper and work directories live on another target.
    Overlay {
        over: String,
        /// The trees the plan makes on it (`tree_files`) lie in the lower layer, each of
        /// their directories also in the upper layer: every directory is merged. Otherwise
        /// the lower layer is empty and what is made through the overlay lies in the upper
        /// layer alone (stacking without merging).
        merged: bool,
    },
    /// A simulated remote file system (`fsbench remote create`) serving a tree.
    Remote {
        server: RemoteServer,
        /// A preset name or "BANDWIDTH/RTT".
        network: String,
        protocol: String,
        cache_size: u64,
        lookaside: Option<Lookaside>,
        writable: bool,
    },
    /// An NFS server (`fsbench nfs`: NFS-Ganesha on 127.0.0.1) exporting a directory fsbench
    /// makes: on a new image's file system (`size` and `fs`), or under OUTDIR.
    Nfs {
        /// The image and its file system, when the export is on one.
        image: Option<(u64, String)>,
        /// NFS protocol version, 3 or 4.
        version: u32,
    },
    /// A simulated disk (`fsbench disk create`) carrying a file system.
    Disk {
        size: u64,
        fs: String,
        model: String,
        /// `fsbench disk create` options (name without `--`, value).
        params: Vec<(String, String)>,
        mkfs_options: Vec<String>,
        mount_options: String,
    },
}

/// What a remote target serves.
#[derive(Debug, Clone, serde::Serialize)]
pub enum RemoteServer {
    /// An existing directory (only read unless the target is writable).
    Dir(PathBuf),
    /// A source tree as `fsbench build` generates it, made under OUTDIR at set-up:
    /// `files`, `dirs`, `headers`, `headers_per_job`, `source_size`, `seed`.
    Source(Vec<(String, u64)>),
}

/// A lookaside tree of a remote target.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum Lookaside {
    /// An existing directory.
    Dir(PathBuf),
    /// A next version of the served tree (`fsbench age --next-version`) made at set-up,
    /// with this share of its files unchanged, and (when given) this share of its bytes
    /// in them (`--keep-bytes`).
    Common(f64, Option<f64>),
}

impl Lookaside {
    /// The level's text: "none", a share ("0.5"), a pair of shares of files and bytes
    /// ("0.9/0.79") or a path.
    pub fn level(l: Option<&Lookaside>) -> String {
        match l {
            None => "none".into(),
            Some(Lookaside::Common(f, None)) => f.to_string(),
            Some(Lookaside::Common(f, Some(b))) => format!("{f}/{b}"),
            Some(Lookaside::Dir(p)) => p.display().to_string(),
        }
    }

    /// The lookaside of a level's text (see [`Lookaside::level`]).
    pub fn from_level(s: &str) -> Option<Lookaside> {
        if s == "none" {
            return None;
        }
        if let Some(pair) = Lookaside::pair(s) {
            return Some(pair);
        }
        match s.parse::<f64>() {
            Ok(f) => Some(Lookaside::Common(f, None)),
            Err(_) => Some(Lookaside::Dir(PathBuf::from(s))),
        }
    }

    /// "F/B", two numbers: the shares of files and bytes in common.
    pub fn pair(s: &str) -> Option<Lookaside> {
        let (f, b) = s.split_once('/')?;
        Some(Lookaside::Common(f.parse().ok()?, Some(b.parse().ok()?)))
    }
}

/// Keys of a remote target's `source` table (a generated source tree).
pub const SOURCE_PARAMS: [&str; 7] = [
    "files",
    "dirs",
    "headers",
    "headers_per_job",
    "source_size",
    "heavy_tail",
    "seed",
];

#[derive(Debug, Clone, serde::Serialize)]
pub struct Target {
    pub name: String,
    pub kind: TargetKind,
    pub device: Device,
    pub age: Option<Age>,
    /// The measured child's memory limit on this target, in bytes (`memory`).
    pub memory: Option<u64>,
    /// Where the plan defines it (`file:line:col` of its `[[target]]` table).
    pub at: String,
}

impl Target {
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            TargetKind::Dir { .. } => "dir",
            TargetKind::Image { .. } => "image",
            TargetKind::Overlay { .. } => "overlay",
            TargetKind::Disk { .. } => "disk",
            TargetKind::Remote { .. } => "remote",
            TargetKind::Nfs { .. } => "nfs",
        }
    }
}

/// A parameter value, kept in its canonical text form (what the command line gets).
pub type Value = String;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Measurement {
    pub name: String,
    pub kind: Kind,
    /// Fixed parameters (after --quick overrides), in the plan's order.
    pub params: Vec<(String, Value)>,
    /// Parameters that are factors, each with its levels.
    pub factors: Vec<(String, Vec<Value>)>,
    /// The plan's headline figures (`figures = [...]`); empty for the kind's own
    /// (`experiment::headline`).
    pub figures: Vec<String>,
    /// A workload that can end before its time by itself (finish flowops, a fio job that is
    /// not time based): its warm cells get no warm-up inside the run.
    pub ends_by_itself: bool,
    /// Why a cold cache cannot change much of what it measures, and where the plan defines
    /// it (`file:line:col`): it reads nothing that was on disk before it started (PostMark
    /// makes its pool while measuring; a workload that creates what it reads, or only
    /// writes). `None` when it reads what was laid out before.
    pub cache_blind: Option<(String, String)>,
    /// What the device must do in its runs (`device_work`): the study ran it against a disk.
    pub device_work: Option<DeviceWork>,
}

/// A measurement whose runs must keep their device working (`device_work`): a run whose
/// device was busy less than `busy_min` of its window, or whose reads the page cache served
/// more than `cache_hit_max` percent of, is flagged `device_idle`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceWork {
    pub busy_min: Option<f64>,
    pub cache_hit_max: Option<f64>,
}

impl Measurement {
    /// Seconds one run takes when the plan fixes it (workload `duration`).
    pub fn fixed_seconds(&self) -> Option<f64> {
        let d = self
            .params
            .iter()
            .find(|(k, _)| k == "duration")
            .map(|(_, v)| v.clone());
        d.and_then(|v| v.parse().ok())
            .map(|d: f64| d + self.warmup())
    }

    fn warmup(&self) -> f64 {
        self.params
            .iter()
            .find(|(k, _)| k == "warmup")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0.0)
    }
}

/// `compare`: per factor, each level paired with the level it is compared with.
pub type ComparePairs = Vec<(String, Vec<(String, String)>)>;

/// The validated plan.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Plan {
    pub file: PathBuf,
    #[serde(skip)]
    pub text: String,
    pub name: String,
    pub description: String,
    pub seed: u64,
    /// Rounds to run (at least, with `adaptive`).
    pub repetitions: u32,
    pub adaptive: Option<Adaptive>,
    pub order: Order,
    pub fresh: Fresh,
    pub time_limit_s: f64,
    pub noise_threshold: f64,
    pub warmup_runs: u32,
    pub baseline: Vec<(String, Value)>,
    pub compare: ComparePairs,
    pub targets: Vec<Target>,
    pub measurements: Vec<Measurement>,
    /// Levels of the `target` factor (target names).
    pub target_levels: Vec<String>,
    /// Levels of the `cache` factor: "cold", "warm" or "remount".
    pub cache_levels: Vec<String>,
    /// Plan-wide factors over device settings ([`SETTING_FACTORS`]), each with its levels.
    pub setting_levels: Vec<(String, Vec<String>)>,
    /// The `[devices.NAME]` profiles.
    pub devices: BTreeMap<String, Device>,
    pub excludes: Vec<Vec<(String, Value)>>,
    pub quick: bool,
    /// Where the plan first sets a memory limit (`file:line:col`), if it does.
    pub memory_at: Option<String>,
    /// A cold or device run whose device served less than this share of the bytes it read
    /// is flagged `cache_served`.
    pub cache_served_share: f64,
    /// Pause the kernel's DAMON reclaimers while set up (`proactive_reclaim = "pause"`).
    pub pause_reclaim: bool,
    /// The `[[background]]` loads, levels of the measurements' background factors.
    pub backgrounds: Vec<Background>,
    /// The paper's figures (`[[published]]`), each with its rule.
    pub published: Vec<Published>,
    /// How the cells carrying a published figure repeat ([`published::rounds`]); `None`
    /// without entries, or when the quick scale fixes the repetitions.
    pub published_rounds: Option<Adaptive>,
}

/// Keys of `fsbench disk create` a disk target may set in its `disk` table.
pub const DISK_PARAMS: [&str; 13] = [
    "rpm",
    "seek_avg",
    "seek_track",
    "seek_full",
    "transfer",
    "transfer_inner",
    "zones",
    "heads",
    "cache_segments",
    "segment_size",
    "bus_rate",
    "overhead",
    "queue_depth",
];

/// Read and validate a plan. `quick` applies the plan's quick scale.
pub fn load(file: &Path, quick: bool) -> Result<Plan, PlanError> {
    let text = fsbench_base::input::read_text(file, fsbench_base::input::PLAN)
        .map_err(|e| PlanError(format!("{}: {e}", file.display())))?;
    parse(file, &text, quick)
}

/// Parse and validate a plan's text, section by section, in the order errors are reported.
pub fn parse(file: &Path, text: &str, quick: bool) -> Result<Plan, PlanError> {
    let ctx = check::Ctx { file, text };
    let raw = header::read(&ctx, quick)?;
    let base_dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    let head = header::experiment(&ctx, &raw, quick)?;
    let targets = targets::targets(&ctx, &raw.targets, &base_dir, quick)?;
    let target_levels = factors::target_levels(&ctx, &raw.factors, &targets)?;
    let cache_levels = factors::cache_levels(&ctx, &raw.factors, &targets, &target_levels)?;
    let devices = factors::devices(&ctx, &raw.devices)?;
    let setting_levels = factors::Settings {
        ctx: &ctx,
        f: &raw.factors,
        devices: &devices,
        levels: Vec::new(),
    }
    .read(&targets, &target_levels, &base_dir)?;
    let devices: BTreeMap<String, Device> = devices.into_iter().map(|(k, (d, _))| (k, d)).collect();
    schedulers::check(
        &ctx,
        &raw.targets,
        &targets,
        &target_levels,
        &setting_levels,
        &devices,
    )?;
    let (backgrounds, bg_factors) =
        background::backgrounds(&ctx, &raw.backgrounds, &base_dir, quick)?;
    let measurements =
        measurements::measurements(&ctx, &raw.measurements, &base_dir, quick, &bg_factors)?;
    let memory_at = memory::check(&ctx, &raw, &measurements, &target_levels, quick)?;
    let cache_served_share = memory::cache_served_share(&ctx, &raw)?;
    let pause_reclaim = memory::pause_reclaim(&ctx, &raw)?;
    let levels = levels::Levels {
        measurements: &measurements,
        target: &target_levels,
        cache: &cache_levels,
        settings: &setting_levels,
    };
    let baseline = levels.cell(&ctx, &raw.experiment.baseline, "baseline")?;
    // Under --quick an exclusion or a compared pair may name a level only the full scale
    // has: it excludes or compares nothing there (a list keeps its other levels), and is
    // checked against the full-scale plan instead (a typo still fails).
    let mut full_scale_ok: Option<bool> = None;
    let mut full_ok = || *full_scale_ok.get_or_insert_with(|| parse(file, text, false).is_ok());
    let compare = match levels.pairs(&ctx, &raw.experiment.compare) {
        Ok(c) => c,
        Err(_) if quick && full_ok() => {
            levels.pairs(&ctx, &levels.present_only(&raw.experiment.compare))?
        }
        Err(e) => return Err(e),
    };
    let mut excludes = Vec::new();
    for e in &raw.excludes {
        match levels.exclusions(&ctx, e, false) {
            Ok(c) => excludes.extend(c),
            Err(_) if quick && full_ok() => excludes.extend(levels.exclusions(&ctx, e, true)?),
            Err(err) => return Err(err),
        }
    }
    let published = published::entries(&ctx, &raw.published, &levels, quick, &mut full_ok)?;
    // The quick scale's count replaces adaptive repetitions, a published figure's too.
    let fixed_by_quick = quick && raw.quick.repetitions.is_some();
    let published_rounds = (!published.is_empty() && !fixed_by_quick)
        .then(|| published::rounds(head.repetitions, head.adaptive));
    let x = &raw.experiment;
    Ok(Plan {
        file: file.to_path_buf(),
        text: text.to_string(),
        name: head.name,
        description: x.description.clone(),
        seed: x.seed,
        repetitions: head.repetitions,
        adaptive: head.adaptive,
        order: head.order,
        fresh: head.fresh,
        time_limit_s: head.time_limit_s,
        noise_threshold: head.noise_threshold,
        warmup_runs: x.warmup_runs,
        baseline,
        compare,
        targets,
        measurements,
        target_levels,
        cache_levels,
        setting_levels,
        devices,
        excludes,
        quick,
        memory_at,
        cache_served_share,
        pause_reclaim,
        backgrounds,
        published,
        published_rounds,
    })
}

impl Plan {
    /// Whether `factor` is a background factor (its levels name backgrounds, not values).
    pub fn is_background_factor(&self, factor: &str) -> bool {
        self.backgrounds.iter().any(|b| b.factor == factor)
    }

    /// The background a cell's factor level names (`None` for "none" or another factor).
    pub fn background(&self, factor: &str, level: &str) -> Option<&Background> {
        self.backgrounds
            .iter()
            .find(|b| b.factor == factor && b.name == level)
    }

    pub fn target(&self, name: &str) -> &Target {
        self.targets
            .iter()
            .find(|t| t.name == name)
            .expect("validated target name")
    }

    /// The targets to build, dependencies (overlay lower targets) first.
    pub fn targets_in_setup_order(&self) -> Vec<&Target> {
        let mut out: Vec<&Target> = Vec::new();
        fn add<'a>(p: &'a Plan, name: &str, out: &mut Vec<&'a Target>) {
            if out.iter().any(|t| t.name == name) {
                return;
            }
            let t = p.target(name);
            if let TargetKind::Overlay { over, .. } = &t.kind {
                add(p, over, out);
            }
            out.push(t);
        }
        for n in &self.target_levels {
            add(self, n, &mut out);
        }
        out
    }

    /// A short stable hash of the plan text and scale, to tell whether --resume continues the
    /// same experiment.
    pub fn hash(&self) -> String {
        // FNV-1a, 64 bits: stable across versions, enough to tell plans apart.
        let mut h: u64 = 0xcbf29ce484222325;
        for b in self.text.bytes().chain([self.quick as u8]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        format!("{h:016x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Plan, PlanError> {
        parse(Path::new("t.toml"), text, false)
    }

    const OK: &str = r#"
[experiment]
name = "t"
repetitions = 3
baseline = { target = "a" }

[[target]]
name = "a"
kind = "dir"
path = "/tmp"

[[target]]
name = "b"
kind = "overlay"
over = "a"

[factors]
target = ["a", "b"]
cache = ["warm", "cold"]

[[measurement]]
name = "pm"
kind = "postmark"
params = { number = 100, transactions = 200 }
factors = { instances = [1, 2] }
quick = { transactions = 50 }

[[exclude]]
target = "b"
instances = 2
"#;

    const REMOTE: &str = r#"
[experiment]
name = "r"
repetitions = 2

[quick]
factors = { network = ["1mbit"] }

[[target]]
name = "rem"
kind = "remote"
source = { files = 20 }
quick_source = { files = 4 }

[factors]
network = ["100mbit", "2mbit/30ms"]
lookaside = ["none", 1.0, 0.25, "0.9/0.79"]

[[measurement]]
name = "b"
kind = "build"
params = { src = "." }
"#;

    /// Under --quick, an exclusion naming a level only the full scale runs excludes nothing;
    /// one naming no level at all is still refused, with its place.
    #[test]
    fn a_quick_scale_keeps_exclusions_of_full_scale_levels() {
        let text = format!("{REMOTE}\n[[exclude]]\nnetwork = \"100mbit\"\nlookaside = 1.0\n");
        let full = p(&text).unwrap();
        assert_eq!(full.excludes.len(), 1);
        let q = parse(Path::new("t.toml"), &text, true).unwrap();
        assert!(q.excludes.is_empty());
        let typo = text.replace(
            "network = \"100mbit\"\nlookaside",
            "network = \"100mbits\"\nlookaside",
        );
        for quick in [false, true] {
            let e = parse(Path::new("t.toml"), &typo, quick).unwrap_err().0;
            assert!(
                e.contains("\"100mbits\" is not a level of `network`"),
                "{e}"
            );
            assert!(e.starts_with("t.toml:25:11:"), "{e}");
        }
    }

    #[test]
    fn remote_targets_and_their_factors() {
        let plan = p(REMOTE).unwrap();
        assert_eq!(
            plan.setting_levels,
            [
                (
                    "network".to_string(),
                    vec!["100mbit".to_string(), "2mbit/30ms".into()]
                ),
                (
                    "lookaside".to_string(),
                    vec![
                        "none".to_string(),
                        "1".into(),
                        "0.25".into(),
                        "0.9/0.79".into()
                    ]
                ),
            ]
        );
        assert_eq!(
            Lookaside::from_level("0.9/0.79"),
            Some(Lookaside::Common(0.9, Some(0.79)))
        );
        assert_eq!(Lookaside::level(Some(&Lookaside::Common(0.5, None))), "0.5");
        match &plan.targets[0].kind {
            TargetKind::Remote {
                server: RemoteServer::Source(s),
                network,
                protocol,
                ..
            } => {
                assert_eq!(s, &[("files".to_string(), 20)]);
                assert_eq!(network, "10mbit");
                assert_eq!(protocol, "whole-file");
            }
            k => panic!("{k:?}"),
        }
        let q = parse(Path::new("t.toml"), REMOTE, true).unwrap();
        assert_eq!(q.setting_levels[0].1, ["1mbit"]);
        match &q.targets[0].kind {
            TargetKind::Remote {
                server: RemoteServer::Source(s),
                ..
            } => assert_eq!(s, &[("files".to_string(), 4)]),
            k => panic!("{k:?}"),
        }
        let bad = |from: &str, to: &str, want: &str| {
            let e = p(&REMOTE.replace(from, to)).unwrap_err().0;
            assert!(e.contains(want), "{e}");
            assert!(e.starts_with("t.toml:"), "{e}");
        };
        bad(
            "\"2mbit/30ms\"",
            "\"fast\"",
            "network \"fast\": expected a preset",
        );
        bad("\"2mbit/30ms\"", "\"2mbit/soon\"", "network \"2mbit/soon\"");
        bad("0.25,", "1.5,", "a share of files in common");
        bad(
            "\"0.9/0.79\"",
            "\"0.9/1.79\"",
            "shares of files and bytes in common, each from 0 to 1",
        );
        bad("source = { files = 20 }", "", "needs `server`");
        bad(
            "source = { files = 20 }",
            "source = { files = 20, size = 3 }",
            "source `size`",
        );
        bad(
            "kind = \"remote\"",
            "kind = \"dir\"\npath = \"/tmp\"",
            "`source` does not apply",
        );
        bad(
            "[factors]",
            "[factors]\ncache = [\"remount\"]",
            "is a remote",
        );
        bad(
            "source = { files = 20 }",
            "source = { files = 20 }\nprotocol = \"nfs\"",
            "protocol: expected",
        );
        // The factors need remote targets.
        let e = p(&REMOTE.replace(
            "[factors]",
            "[[target]]\nname = \"d\"\nkind = \"dir\"\npath = \"/tmp\"\n\n[factors]\ntarget = [\"rem\", \"d\"]",
        ))
        .unwrap_err()
        .0;
        assert!(e.contains("apply to remote targets, and target d"), "{e}");
    }

    #[test]
    fn parses_and_validates() {
        let plan = p(OK).unwrap();
        assert_eq!(plan.repetitions, 3);
        assert_eq!(plan.target_levels, ["a", "b"]);
        assert_eq!(
            plan.measurements[0].factors,
            [(
                "instances".to_string(),
                vec!["1".to_string(), "2".to_string()]
            )]
        );
        assert_eq!(plan.excludes.len(), 1);
        let order: Vec<_> = plan
            .targets_in_setup_order()
            .iter()
            .map(|t| t.name.clone())
            .collect();
        assert_eq!(order, ["a", "b"]);
        let q = parse(Path::new("t.toml"), OK, true).unwrap();
        assert!(q.measurements[0]
            .params
            .contains(&("transactions".into(), "50".into())));
    }

    #[test]
    fn compare_pairs_are_checked_and_located() {
        let with = |c: &str| OK.replace("baseline = { target = \"a\" }", c);
        let err = |c: &str| p(&with(c)).unwrap_err().0;
        let plan = p(&with("compare = { instances = { 2 = 1 } }")).unwrap();
        assert_eq!(
            plan.compare,
            [("instances".to_string(), vec![("2".into(), "1".into())])]
        );
        assert!(p(OK).unwrap().compare.is_empty());
        for (compare, want) in [
            (
                "compare = { size = { 2 = 1 } }",
                "t.toml:5:13: compare: `size` is not a factor of this plan",
            ),
            (
                "compare = { target = { c = \"a\" } }",
                "t.toml:5:24: compare: \"c\" is not a level of `target` (levels: a, b)",
            ),
            (
                "compare = { target = { b = \"c\" } }",
                "t.toml:5:28: compare: \"c\" is not a level of `target`",
            ),
            (
                "compare = { target = { b = \"b\" } }",
                "t.toml:5:28: compare: \"b\" is compared with itself",
            ),
            (
                "compare = { target = {} }",
                "t.toml:5:13: compare: `target` pairs no levels",
            ),
        ] {
            let e = err(compare);
            assert!(e.contains(want), "{compare}: {e}");
        }
        let e = err("compare = { target = \"a\" }");
        assert!(e.starts_with("t.toml:5:"), "{e}");
    }

    #[test]
    fn unknown_keys_are_located() {
        let e = p(&OK.replace("kind = \"postmark\"", "kind = \"postmark\"\nretries = 2"))
            .unwrap_err()
            .0;
        assert!(e.starts_with("t.toml:"), "{e}");
        assert!(e.contains("retries"), "{e}");
        let e = p(&OK.replace("transactions = 200", "transaction = 200"))
            .unwrap_err()
            .0;
        assert!(e.contains("t.toml:24:40:"), "{e}");
        assert!(
            e.contains("`transaction` is not a parameter of a postmark measurement"),
            "{e}"
        );
        let e = p(&OK.replace("path = \"/tmp\"", "path = \"/tmp\"\nsize = \"1G\""))
            .unwrap_err()
            .0;
        assert!(
            e.contains("`size` does not apply to a target of kind dir"),
            "{e}"
        );
        let e = p(&OK.replace("kind = \"dir\"", "kind = \"smb\""))
            .unwrap_err()
            .0;
        assert!(e.contains("t.toml:9:8: target kind \"smb\""), "{e}");
        let e = p(&OK.replace("kind = \"dir\"", "kind = \"nfs\""))
            .unwrap_err()
            .0;
        assert!(
            e.contains("`path` does not apply to a target of kind nfs"),
            "{e}"
        );
        let e = p(&OK.replace("instances = 2\n", "instances = 4\n"))
            .unwrap_err()
            .0;
        assert!(e.contains("\"4\" is not a level of `instances`"), "{e}");
        let e = p(&OK.replace("over = \"a\"", "over = \"b\""))
            .unwrap_err()
            .0;
        assert!(e.contains("cycle"), "{e}");
        let e = p(&OK.replace("\"warm\", \"cold\"", "\"remount\""))
            .unwrap_err()
            .0;
        assert!(
            e.contains("cache \"remount\": target a is an existing directory"),
            "{e}"
        );
        let e = p(&OK.replace("\"warm\", \"cold\"", "\"lukewarm\""))
            .unwrap_err()
            .0;
        assert!(e.contains("cache \"lukewarm\": expected"), "{e}");
    }

    #[test]
    fn workload_variables_are_checked() {
        let w = OK.replace(
            "kind = \"postmark\"\nparams = { number = 100, transactions = 200 }\nfactors = { instances = [1, 2] }\nquick = { transactions = 50 }",
            "kind = \"workload\"\nparams = { workload = \"fileserver\", nfiles = 100, duration = 2 }\nfactors = { nthreads = [1, 2] }",
        ).replace("instances = 2", "nthreads = 2");
        let plan = p(&w).unwrap();
        assert_eq!(plan.measurements[0].fixed_seconds(), Some(2.0));
        let e = p(&w.replace("nfiles = 100", "nfile = 100")).unwrap_err().0;
        assert!(e.contains("nor a variable of the workload"), "{e}");
    }

    #[test]
    fn headline_figures_and_adaptive_repetitions_are_checked() {
        let plan = p(&OK.replace(
            "quick = { transactions = 50 }",
            "quick = { transactions = 50 }\nfigures = [\"total_s\", \"transactions_per_s\"]",
        ))
        .unwrap();
        assert_eq!(
            plan.measurements[0].figures,
            ["total_s", "transactions_per_s"]
        );
        let e = p(&OK.replace(
            "quick = { transactions = 50 }",
            "quick = { transactions = 50 }\nfigures = [\"total_s\", \"tps\"]",
        ))
        .unwrap_err()
        .0;
        assert!(e.contains("t.toml:27:23: figure \"tps\" is not one a postmark measurement produces; it produces: transactions_per_s"), "{e}");
        let a = p(&OK.replace(
            "repetitions = 3",
            "repetitions = { min = 3, max = 30, ci = 0.05 }",
        ))
        .unwrap();
        assert_eq!(a.repetitions, 3);
        assert_eq!(
            a.adaptive,
            Some(Adaptive {
                min: 3,
                max: 30,
                ci: 0.05
            })
        );
        let bad = |to: &str, want: &str| {
            let e = p(&OK.replace("repetitions = 3", to)).unwrap_err().0;
            assert!(e.contains(want), "{e}");
            assert!(e.starts_with("t.toml:4:15: "), "{e}");
        };
        bad(
            "repetitions = { min = 3, max = 30, ci = 1.5 }",
            "repetitions.ci = 1.5: expected a share of the mean between 0 and 1",
        );
        bad(
            "repetitions = { min = 3, max = 30, ci = 0 }",
            "repetitions.ci = 0:",
        );
        bad(
            "repetitions = { min = 5, max = 3, ci = 0.1 }",
            "min = 5 is more than max = 3",
        );
        bad("repetitions = { min = 3, ci = 0.1 }", "need `max`");
        bad(
            "repetitions = { min = 3, max = 4, ci = 0.1, until = 2 }",
            "unknown key `until`",
        );
        bad(
            "repetitions = { min = 1, max = 4, ci = 0.1 }",
            "at least 2 repetitions",
        );
        bad("repetitions = 0", "expected a whole number from 1");
        bad("repetitions = \"many\"", "expected a count or");
    }

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }
}
