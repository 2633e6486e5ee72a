//! The experiment plan: a TOML file, typed and validated before anything runs.
//!
//! Parsing goes through serde with `deny_unknown_fields` everywhere, so a key this version
//! does not implement is an error naming the file, line and column, never a setting
//! silently ignored. Values that need more than their type (a target kind's own keys, a
//! factor's levels, a workload's variables) are checked afterwards with the spans `toml`
//! keeps, and refused the same way.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

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

struct Ctx<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(&self, span: std::ops::Range<usize>, msg: impl std::fmt::Display) -> PlanError {
        let (line, col) = line_col(self.text, span.start);
        let src = self.text.lines().nth(line - 1).unwrap_or("");
        PlanError(format!(
            "{}:{line}:{col}: {msg}\n  {src}\n  {}^",
            self.file.display(),
            " ".repeat(col - 1)
        ))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    experiment: RawExperiment,
    #[serde(default, rename = "target")]
    targets: Vec<Spanned<RawTarget>>,
    #[serde(default, rename = "measurement")]
    measurements: Vec<Spanned<RawMeasurement>>,
    #[serde(default)]
    factors: RawFactors,
    /// Named device-setting profiles, levels of the `device` factor.
    #[serde(default)]
    devices: BTreeMap<String, Spanned<RawDevice>>,
    #[serde(default, rename = "exclude")]
    excludes: Vec<BTreeMap<Spanned<String>, Spanned<toml::Value>>>,
    #[serde(default)]
    quick: RawQuick,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExperiment {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default = "one")]
    seed: u64,
    repetitions: Spanned<u32>,
    #[serde(default)]
    order: Option<Spanned<String>>,
    #[serde(default)]
    fresh: Option<Spanned<String>>,
    #[serde(default)]
    time_limit: Option<Spanned<f64>>,
    #[serde(default)]
    noise_threshold: Option<Spanned<f64>>,
    #[serde(default)]
    warmup_runs: u32,
    #[serde(default)]
    baseline: BTreeMap<Spanned<String>, Spanned<toml::Value>>,
}

fn one() -> u64 {
    1
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawQuick {
    repetitions: Option<Spanned<u32>>,
    time_limit: Option<Spanned<f64>>,
    /// Plan-wide factor levels under --quick (each replaces the full scale's levels).
    factors: Option<RawFactors>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct RawFactors {
    target: Option<Spanned<Vec<Spanned<String>>>>,
    cache: Option<Spanned<Vec<Spanned<String>>>>,
    /// Device settings as factors: named `[devices.NAME]` profiles, or single settings.
    device: Option<Spanned<Vec<Spanned<String>>>>,
    scheduler: Option<Spanned<Vec<Spanned<String>>>>,
    read_ahead_kb: Option<Spanned<Vec<Spanned<u64>>>>,
    nr_requests: Option<Spanned<Vec<Spanned<u64>>>>,
    rotational: Option<Spanned<Vec<Spanned<bool>>>>,
    /// Remote settings as factors: the network, the lookaside tree.
    network: Option<Spanned<Vec<Spanned<String>>>>,
    lookaside: Option<Spanned<Vec<Spanned<toml::Value>>>>,
}

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    name: Spanned<String>,
    kind: Spanned<String>,
    path: Option<Spanned<String>>,
    size: Option<Spanned<String>>,
    /// The size at --quick scale.
    quick_size: Option<Spanned<String>>,
    fs: Option<Spanned<String>>,
    mkfs_options: Option<Spanned<Vec<Spanned<String>>>>,
    mount_options: Option<Spanned<String>>,
    over: Option<Spanned<String>>,
    model: Option<Spanned<String>>,
    disk: Option<Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    device: Option<Spanned<RawDevice>>,
    age: Option<Spanned<RawAge>>,
    // Remote targets.
    server: Option<Spanned<String>>,
    source: Option<Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    quick_source: Option<Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    network: Option<Spanned<String>>,
    protocol: Option<Spanned<String>>,
    cache_size: Option<Spanned<String>>,
    lookaside: Option<Spanned<toml::Value>>,
    writable: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevice {
    scheduler: Option<Spanned<String>>,
    #[serde(default)]
    tunables: BTreeMap<String, Spanned<toml::Value>>,
    read_ahead_kb: Option<Spanned<u64>>,
    nr_requests: Option<Spanned<u64>>,
    rotational: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAge {
    #[serde(default)]
    profile: Option<String>,
    fill: Option<Spanned<f64>>,
    ops: Option<Spanned<u64>>,
    quick_ops: Option<Spanned<u64>>,
    #[serde(default = "one")]
    seed: u64,
    per: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMeasurement {
    name: Spanned<String>,
    kind: Spanned<String>,
    #[serde(default)]
    params: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    quick: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    factors: BTreeMap<String, Spanned<Vec<Spanned<toml::Value>>>>,
    #[serde(default)]
    quick_factors: BTreeMap<String, Spanned<Vec<Spanned<toml::Value>>>>,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum AgePer {
    Target,
    Repetition,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Age {
    pub profile: String,
    pub fill: f64,
    pub ops: u64,
    pub seed: u64,
    pub per: AgePer,
}

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
    Overlay { over: String },
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
    /// A simulated disk (`fsbench disk create`) carrying a file system.
    Disk {
        size: u64,
        fs: String,
        model: String,
        /// `fsbench disk create` options (name without `--`, value).
        params: Vec<(String, String)>,
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
    /// with this share of its files unchanged.
    Common(f64),
}

impl Lookaside {
    /// The level's text: "none", a share ("0.5") or a path.
    pub fn level(l: Option<&Lookaside>) -> String {
        match l {
            None => "none".into(),
            Some(Lookaside::Common(f)) => f.to_string(),
            Some(Lookaside::Dir(p)) => p.display().to_string(),
        }
    }

    /// The lookaside of a level's text (see [`Lookaside::level`]).
    pub fn from_level(s: &str) -> Option<Lookaside> {
        if s == "none" {
            return None;
        }
        match s.parse::<f64>() {
            Ok(f) => Some(Lookaside::Common(f)),
            Err(_) => Some(Lookaside::Dir(PathBuf::from(s))),
        }
    }
}

/// Keys of a remote target's `source` table (a generated source tree).
pub const SOURCE_PARAMS: [&str; 6] = [
    "files",
    "dirs",
    "headers",
    "headers_per_job",
    "source_size",
    "seed",
];

/// Check a network level: a preset of `fsbench remote` or "BANDWIDTH/RTT".
fn check_network(s: &str) -> Result<(), String> {
    if crate::remote::model::Net::preset(s).is_some() {
        return Ok(());
    }
    let presets = crate::remote::model::PRESETS
        .iter()
        .map(|p| p.0)
        .collect::<Vec<_>>()
        .join(", ");
    let Some((b, r)) = s.split_once('/') else {
        return Err(format!(
            "network {s:?}: expected a preset ({presets}) or \"BANDWIDTH/RTT\" such as \"10mbit/20ms\""
        ));
    };
    crate::remote::model::parse_bandwidth(b).map_err(|e| format!("network {s:?}: {e}"))?;
    crate::remote::model::parse_rtt(r).map_err(|e| format!("network {s:?}: {e}"))?;
    Ok(())
}

/// A lookaside level from the plan: "none", a share from 0 to 1, or a directory
/// (relative to the plan).
fn lookaside_of(
    ctx: &Ctx,
    v: &Spanned<toml::Value>,
    base_dir: &Path,
) -> Result<Option<Lookaside>, PlanError> {
    match v.get_ref() {
        toml::Value::String(s) if s == "none" => Ok(None),
        toml::Value::String(s) => {
            let p = base_dir.join(s);
            if !p.is_dir() {
                return Err(ctx.err(
                    v.span(),
                    format!("lookaside {}: not an existing directory", p.display()),
                ));
            }
            Ok(Some(Lookaside::Dir(p)))
        }
        toml::Value::Float(_) | toml::Value::Integer(_) => {
            let f = match v.get_ref() {
                toml::Value::Float(f) => *f,
                toml::Value::Integer(i) => *i as f64,
                _ => unreachable!(),
            };
            if !(0.0..=1.0).contains(&f) {
                return Err(ctx.err(
                    v.span(),
                    "lookaside: a share of files in common, from 0 to 1",
                ));
            }
            Ok(Some(Lookaside::Common(f)))
        }
        _ => Err(ctx.err(
            v.span(),
            "lookaside: expected \"none\", a share of files in common (0 to 1) or a directory",
        )),
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Target {
    pub name: String,
    pub kind: TargetKind,
    pub device: Device,
    pub age: Option<Age>,
}

impl Target {
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            TargetKind::Dir { .. } => "dir",
            TargetKind::Image { .. } => "image",
            TargetKind::Overlay { .. } => "overlay",
            TargetKind::Disk { .. } => "disk",
            TargetKind::Remote { .. } => "remote",
        }
    }
}

/// What a measurement runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Kind {
    Workload,
    Postmark,
    Andrew,
    Find,
    Build,
    Layout,
    Scan,
    Replay,
}

/// How a parameter becomes command-line arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// `--flag VALUE`
    Value,
    /// `--flag` when true, nothing when false.
    Switch,
    /// Handled by the runner, not passed on.
    Runner,
    /// The positional argument.
    Positional,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Int,
    Float,
    Str,
    Bool,
}

/// One parameter a kind accepts: name in the plan, command-line flag, how, type.
pub type Param = (&'static str, &'static str, Arg, Ty);

impl Kind {
    pub const ALL: [(&'static str, Kind); 8] = [
        ("workload", Kind::Workload),
        ("postmark", Kind::Postmark),
        ("andrew", Kind::Andrew),
        ("find", Kind::Find),
        ("build", Kind::Build),
        ("layout", Kind::Layout),
        ("scan", Kind::Scan),
        ("replay", Kind::Replay),
    ];

    pub fn name(self) -> &'static str {
        Kind::ALL.iter().find(|(_, k)| *k == self).unwrap().0
    }

    /// The subcommand that measures it.
    pub fn subcommand(self) -> &'static str {
        match self {
            Kind::Workload => "run",
            Kind::Replay => "trace",
            k => k.name(),
        }
    }

    /// The parameters this kind accepts. A workload also takes its own variables
    /// (checked against the workload itself).
    pub fn params(self) -> &'static [Param] {
        use Arg::*;
        use Ty::*;
        match self {
            Kind::Workload => &[
                ("workload", "", Positional, Str),
                ("duration", "--duration", Value, Float),
                ("warmup", "--warmup", Value, Float),
                ("seed", "--seed", Value, Int),
            ],
            Kind::Postmark => &[
                ("config", "", Positional, Str),
                ("number", "--number", Value, Int),
                ("size", "--size", Value, Str),
                ("transactions", "--transactions", Value, Int),
                ("read", "--read", Value, Int),
                ("write", "--write", Value, Int),
                ("bias_read", "--bias-read", Value, Int),
                ("bias_create", "--bias-create", Value, Int),
                ("subdirectories", "--subdirectories", Value, Int),
                ("buffering", "--buffering", Value, Bool),
                ("seed", "--seed", Value, Int),
                ("instances", "--instances", Value, Int),
            ],
            Kind::Andrew => &[
                ("copies", "--copies", Value, Int),
                ("clients", "--clients", Value, Int),
                ("no_compile", "--no-compile", Switch, Bool),
                ("cc", "--cc", Value, Str),
                ("seed", "--seed", Value, Int),
            ],
            Kind::Find => &[
                ("path", "", Runner, Str),
                ("threads", "--threads", Value, Int),
                ("tree_files", "", Runner, Int),
                ("tree_dirs", "", Runner, Int),
            ],
            Kind::Build => &[
                ("src", "", Runner, Str),
                ("files", "--files", Value, Int),
                ("dirs", "--dirs", Value, Int),
                ("jobs", "--jobs", Value, Int),
                ("headers", "--headers", Value, Int),
                ("headers_per_job", "--headers-per-job", Value, Int),
                ("source_size", "--source-size", Value, Int),
                ("cpu_ms", "--cpu-ms", Value, Int),
                ("temps", "--temps", Value, Int),
                ("seed", "--seed", Value, Int),
            ],
            Kind::Layout => &[("path", "", Runner, Str), ("sync", "--sync", Switch, Bool)],
            Kind::Replay => &[
                ("trace", "", Positional, Str),
                ("mode", "--mode", Value, Str),
                ("speed", "--speed", Value, Float),
                ("threads", "--threads", Value, Str),
                ("over", "", Runner, Str),
            ],
            Kind::Scan => &[
                ("path", "", Runner, Str),
                ("threads", "--threads", Value, Int),
            ],
        }
    }

    pub fn param(self, name: &str) -> Option<&'static Param> {
        self.params().iter().find(|p| p.0 == name)
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

/// The validated plan.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Plan {
    pub file: PathBuf,
    #[serde(skip)]
    pub text: String,
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub repetitions: u32,
    pub order: Order,
    pub fresh: Fresh,
    pub time_limit_s: f64,
    pub noise_threshold: f64,
    pub warmup_runs: u32,
    pub baseline: Vec<(String, Value)>,
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
}

/// A device-settings table (a target's `device`, or a `[devices.NAME]` profile).
fn device_of(ctx: &Ctx, d: &RawDevice) -> Result<Device, PlanError> {
    let mut device = Device {
        scheduler: d.scheduler.as_ref().map(|s| s.get_ref().clone()),
        ..Default::default()
    };
    if let Some(s) = &d.scheduler {
        if !["none", "mq-deadline", "bfq", "kyber"].contains(&s.get_ref().as_str()) {
            return Err(ctx.err(
                s.span(),
                "scheduler: expected none, mq-deadline, bfq or kyber",
            ));
        }
    }
    for (k, v) in &d.tunables {
        if device.scheduler.is_none() {
            return Err(ctx.err(
                v.span(),
                "tunables need `scheduler` (they belong to one scheduler)",
            ));
        }
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(ctx.err(
                v.span(),
                format!("tunable name {k:?}: expected a file name under queue/iosched/"),
            ));
        }
        let s = scalar(v.get_ref())
            .ok_or_else(|| ctx.err(v.span(), "expected a number, a string or a boolean"))?;
        let s = match s.as_str() {
            "true" => "1".into(),
            "false" => "0".into(),
            _ => s,
        };
        device.tunables.push((k.clone(), s));
    }
    device.read_ahead_kb = d.read_ahead_kb.as_ref().map(|v| *v.get_ref());
    device.nr_requests = d.nr_requests.as_ref().map(|v| *v.get_ref());
    device.rotational = d.rotational.as_ref().map(|v| *v.get_ref());
    Ok(device)
}

/// Canonical text of a scalar TOML value.
fn scalar(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn typed(ctx: &Ctx, v: &Spanned<toml::Value>, ty: Ty, what: &str) -> Result<String, PlanError> {
    let ok = match (ty, v.get_ref()) {
        (Ty::Int, toml::Value::Integer(i)) => *i >= 0,
        (Ty::Float, toml::Value::Float(f)) => f.is_finite() && *f >= 0.0,
        (Ty::Float, toml::Value::Integer(i)) => *i >= 0,
        (Ty::Str, toml::Value::String(_)) => true,
        (Ty::Bool, toml::Value::Boolean(_)) => true,
        _ => false,
    };
    if !ok {
        let want = match ty {
            Ty::Int => "a non-negative integer",
            Ty::Float => "a non-negative number",
            Ty::Str => "a string",
            Ty::Bool => "true or false",
        };
        return Err(ctx.err(v.span(), format!("{what}: expected {want}")));
    }
    Ok(scalar(v.get_ref()).expect("scalar checked above"))
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

const FILESYSTEMS: [&str; 3] = ["ext4", "xfs", "btrfs"];

/// Read and validate a plan. `quick` applies the plan's quick scale.
pub fn load(file: &Path, quick: bool) -> Result<Plan, PlanError> {
    let text =
        std::fs::read_to_string(file).map_err(|e| PlanError(format!("{}: {e}", file.display())))?;
    parse(file, &text, quick)
}

pub fn parse(file: &Path, text: &str, quick: bool) -> Result<Plan, PlanError> {
    let ctx = Ctx { file, text };
    let mut raw: RawPlan = toml::from_str(text).map_err(|e| match e.span() {
        Some(s) => ctx.err(s, e.message()),
        None => PlanError(format!("{}: {}", file.display(), e.message())),
    })?;
    if quick {
        if let Some(q) = raw.quick.factors.clone() {
            let f = &mut raw.factors;
            macro_rules! over {
                ($($k:ident),*) => { $( if q.$k.is_some() { f.$k = q.$k; } )* };
            }
            over!(
                target,
                cache,
                device,
                scheduler,
                read_ahead_kb,
                nr_requests,
                rotational,
                network,
                lookaside
            );
        }
    }
    let base_dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();

    let x = &raw.experiment;
    let name = x.name.get_ref().clone();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(ctx.err(
            x.name.span(),
            "experiment name: use letters, digits, '-', '_' and '.'",
        ));
    }
    let mut repetitions = *x.repetitions.get_ref();
    let mut time_limit = x.time_limit.as_ref().map_or(3600.0, |t| *t.get_ref());
    if let Some(t) = &x.time_limit {
        if !t.get_ref().is_finite() || *t.get_ref() <= 0.0 {
            return Err(ctx.err(
                t.span(),
                "time_limit: expected a positive number of seconds",
            ));
        }
    }
    if quick {
        if let Some(r) = &raw.quick.repetitions {
            repetitions = *r.get_ref();
        }
        if let Some(t) = &raw.quick.time_limit {
            time_limit = *t.get_ref();
        }
    }
    if repetitions == 0 {
        return Err(ctx.err(x.repetitions.span(), "repetitions must be at least 1"));
    }
    let order = match x.order.as_ref().map(|o| (o.get_ref().as_str(), o.span())) {
        None | Some(("random", _)) => Order::Random,
        Some(("interleaved", _)) => Order::Interleaved,
        Some((o, s)) => {
            return Err(ctx.err(
                s,
                format!("order {o:?}: expected \"random\" or \"interleaved\" (an experiment never runs all of one cell before the next)"),
            ))
        }
    };
    let fresh = match x.fresh.as_ref().map(|o| (o.get_ref().as_str(), o.span())) {
        None | Some(("experiment", _)) => Fresh::Experiment,
        Some(("repetition", _)) => Fresh::Repetition,
        Some((o, s)) => {
            return Err(ctx.err(
                s,
                format!("fresh {o:?}: expected \"experiment\" or \"repetition\""),
            ))
        }
    };
    let noise_threshold = x.noise_threshold.as_ref().map_or(0.05, |t| *t.get_ref());
    if let Some(t) = &x.noise_threshold {
        if !(0.0..=1.0).contains(t.get_ref()) {
            return Err(ctx.err(t.span(), "noise_threshold: expected a fraction from 0 to 1"));
        }
    }

    // Targets.
    let mut targets: Vec<Target> = Vec::new();
    let mut target_spans = Vec::new();
    for t in &raw.targets {
        let t_span = t.span();
        let t = t.get_ref();
        let tname = t.name.get_ref().clone();
        if tname.is_empty()
            || !tname
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
        {
            return Err(ctx.err(
                t.name.span(),
                "target name: use letters, digits, '-' and '_'",
            ));
        }
        if targets.iter().any(|o| o.name == tname) {
            return Err(ctx.err(t.name.span(), format!("target {tname:?} is defined twice")));
        }
        let kind_s = t.kind.get_ref().as_str();
        // Which keys each kind takes; any other key given is refused.
        let allowed: &[&str] = match kind_s {
            "dir" => &["path", "device", "age"],
            "image" => &[
                "size",
                "fs",
                "mkfs_options",
                "mount_options",
                "device",
                "age",
            ],
            "overlay" => &["over", "age"],
            "disk" => &[
                "size",
                "fs",
                "model",
                "disk",
                "mount_options",
                "device",
                "age",
            ],
            "remote" => &[
                "server",
                "source",
                "network",
                "protocol",
                "cache_size",
                "lookaside",
                "writable",
            ],
            other => {
                return Err(ctx.err(
                    t.kind.span(),
                    format!("target kind {other:?}: expected dir, image, overlay, disk or remote"),
                ))
            }
        };
        let given: [(&str, Option<std::ops::Range<usize>>); 19] = [
            ("server", t.server.as_ref().map(|v| v.span())),
            ("source", t.source.as_ref().map(|v| v.span())),
            ("source", t.quick_source.as_ref().map(|v| v.span())),
            ("network", t.network.as_ref().map(|v| v.span())),
            ("protocol", t.protocol.as_ref().map(|v| v.span())),
            ("cache_size", t.cache_size.as_ref().map(|v| v.span())),
            ("lookaside", t.lookaside.as_ref().map(|v| v.span())),
            ("writable", t.writable.as_ref().map(|v| v.span())),
            ("path", t.path.as_ref().map(|v| v.span())),
            ("size", t.size.as_ref().map(|v| v.span())),
            ("size", t.quick_size.as_ref().map(|v| v.span())),
            ("fs", t.fs.as_ref().map(|v| v.span())),
            ("mkfs_options", t.mkfs_options.as_ref().map(|v| v.span())),
            ("mount_options", t.mount_options.as_ref().map(|v| v.span())),
            ("over", t.over.as_ref().map(|v| v.span())),
            ("model", t.model.as_ref().map(|v| v.span())),
            ("disk", t.disk.as_ref().map(|v| v.span())),
            ("device", t.device.as_ref().map(|v| v.span())),
            ("age", t.age.as_ref().map(|v| v.span())),
        ];
        for (k, s) in given {
            if let Some(s) = s {
                if !allowed.contains(&k) {
                    return Err(ctx.err(
                        s,
                        format!(
                            "`{k}` does not apply to a target of kind {kind_s} (it takes: {})",
                            allowed.join(", ")
                        ),
                    ));
                }
            }
        }
        let need = |v: &Option<Spanned<String>>, k: &str| -> Result<Spanned<String>, PlanError> {
            v.clone().ok_or_else(|| {
                ctx.err(
                    t_span.clone(),
                    format!("target {tname:?} of kind {kind_s} needs `{k}`"),
                )
            })
        };
        let size = |ctx: &Ctx| -> Result<u64, PlanError> {
            let s = match (&t.quick_size, quick) {
                (Some(q), true) => q.clone(),
                _ => need(&t.size, "size")?,
            };
            let v = crate::disk::cli::parse_size(s.get_ref()).map_err(|e| ctx.err(s.span(), e))?;
            if v < (16 << 20) {
                return Err(ctx.err(s.span(), "size: at least 16M (mkfs needs room)"));
            }
            Ok(v)
        };
        let fs = |ctx: &Ctx| -> Result<String, PlanError> {
            let f = need(&t.fs, "fs")?;
            if !FILESYSTEMS.contains(&f.get_ref().as_str()) {
                return Err(ctx.err(
                    f.span(),
                    format!(
                        "fs {:?}: expected one of {}",
                        f.get_ref(),
                        FILESYSTEMS.join(", ")
                    ),
                ));
            }
            Ok(f.get_ref().clone())
        };
        let mount_options = match &t.mount_options {
            Some(m) => {
                super::options::check_mount(m.get_ref()).map_err(|e| ctx.err(m.span(), e))?;
                m.get_ref().clone()
            }
            None => String::new(),
        };
        let kind = match kind_s {
            "dir" => {
                let p = need(&t.path, "path")?;
                let path = base_dir.join(p.get_ref());
                if !path.is_dir() {
                    return Err(ctx.err(
                        p.span(),
                        format!("{} is not an existing directory", path.display()),
                    ));
                }
                // The refusal `run --dir` applies: measurements and overlays write there.
                if let Some(what) = crate::engine::rundir::system_dir(&path) {
                    return Err(ctx.err(
                        p.span(),
                        format!(
                            "{} is a system directory ({what}); fsbench does not measure or stack overlays there; choose a directory of your own or a mounted test file system",
                            path.display()
                        ),
                    ));
                }
                TargetKind::Dir { path }
            }
            "image" => {
                let fs = fs(&ctx)?;
                let raw: &[Spanned<String>] = t.mkfs_options.as_ref().map_or(&[], |m| m.get_ref());
                let mkfs_options: Vec<String> = raw.iter().map(|o| o.get_ref().clone()).collect();
                super::options::check_mkfs(&fs, &mkfs_options)
                    .map_err(|(i, why)| ctx.err(raw[i].span(), format!("mkfs_options: {why}")))?;
                TargetKind::Image {
                    size: size(&ctx)?,
                    fs,
                    mkfs_options,
                    mount_options,
                }
            }
            "overlay" => TargetKind::Overlay {
                over: need(&t.over, "over")?.get_ref().clone(),
            },
            "disk" => {
                let mut params = Vec::new();
                if let Some(d) = &t.disk {
                    for (k, v) in d.get_ref() {
                        if !DISK_PARAMS.contains(&k.as_str()) {
                            return Err(ctx.err(
                                v.span(),
                                format!(
                                    "disk parameter `{k}`: expected one of {}",
                                    DISK_PARAMS.join(", ")
                                ),
                            ));
                        }
                        let s = scalar(v.get_ref()).ok_or_else(|| {
                            ctx.err(v.span(), "expected a number or a string such as \"5.2ms\"")
                        })?;
                        // Passed on as `--KEY VALUE`: a value, never another option.
                        if s.starts_with('-') || (s.contains('/') && !s.ends_with("/s")) {
                            return Err(ctx.err(
                                v.span(),
                                format!("disk parameter `{k}`: {s:?} is not a value (a number or a string such as \"5.2ms\" or \"50MB/s\")"),
                            ));
                        }
                        params.push((k.clone(), s));
                    }
                }
                let model = t
                    .model
                    .as_ref()
                    .map_or("hdd".to_string(), |m| m.get_ref().clone());
                if crate::disk::model::DiskParams::preset(&model).is_none() {
                    let s = t.model.as_ref().map(|m| m.span()).unwrap_or(t_span.clone());
                    return Err(ctx.err(
                        s,
                        format!(
                            "disk model {model:?}: presets are {}",
                            crate::disk::model::DiskParams::PRESETS.join(", ")
                        ),
                    ));
                }
                TargetKind::Disk {
                    size: size(&ctx)?,
                    fs: fs(&ctx)?,
                    model,
                    params,
                    mount_options,
                }
            }
            "remote" => {
                let server = match (&t.server, &t.source) {
                    (Some(_), Some(s)) => {
                        return Err(ctx.err(
                            s.span(),
                            "a remote target serves either `server` (a directory) or `source` (a generated tree), not both",
                        ))
                    }
                    (None, None) => {
                        return Err(ctx.err(
                            t_span.clone(),
                            format!("remote target {tname:?} needs `server` (an existing directory) or `source` (a generated source tree)"),
                        ))
                    }
                    (Some(p), None) => {
                        let path = base_dir.join(p.get_ref());
                        if !path.is_dir() {
                            return Err(ctx.err(
                                p.span(),
                                format!("{} is not an existing directory", path.display()),
                            ));
                        }
                        RemoteServer::Dir(path)
                    }
                    (None, Some(src)) => {
                        let mut params: Vec<(String, u64)> = Vec::new();
                        let mut tables = vec![src];
                        if quick {
                            tables.extend(t.quick_source.as_ref());
                        }
                        for tab in tables {
                            for (k, v) in tab.get_ref() {
                                if !SOURCE_PARAMS.contains(&k.as_str()) {
                                    return Err(ctx.err(
                                        v.span(),
                                        format!(
                                            "source `{k}`: expected one of {}",
                                            SOURCE_PARAMS.join(", ")
                                        ),
                                    ));
                                }
                                let n = typed(&ctx, v, Ty::Int, k)?.parse::<u64>().unwrap_or(0);
                                if n == 0 && k != "seed" {
                                    return Err(ctx.err(v.span(), format!("{k}: at least 1")));
                                }
                                params.retain(|(pk, _)| pk != k);
                                params.push((k.clone(), n));
                            }
                        }
                        RemoteServer::Source(params)
                    }
                };
                let network = t
                    .network
                    .as_ref()
                    .map_or("10mbit".to_string(), |n| n.get_ref().clone());
                if let Some(n) = &t.network {
                    check_network(n.get_ref()).map_err(|e| ctx.err(n.span(), e))?;
                }
                let protocol = t
                    .protocol
                    .as_ref()
                    .map_or("whole-file".to_string(), |p| p.get_ref().clone());
                if let Some(p) = &t.protocol {
                    if !["whole-file", "block"].contains(&p.get_ref().as_str()) {
                        return Err(
                            ctx.err(p.span(), "protocol: expected \"whole-file\" or \"block\"")
                        );
                    }
                }
                let cache_size = match &t.cache_size {
                    None => 256 << 20,
                    Some(c) => crate::disk::cli::parse_size(c.get_ref())
                        .map_err(|e| ctx.err(c.span(), e))?,
                };
                let lookaside = match &t.lookaside {
                    None => None,
                    Some(v) => lookaside_of(&ctx, v, &base_dir)?,
                };
                TargetKind::Remote {
                    server,
                    network,
                    protocol,
                    cache_size,
                    lookaside,
                    writable: t.writable.as_ref().is_some_and(|w| *w.get_ref()),
                }
            }
            _ => unreachable!(),
        };
        let device = match &t.device {
            Some(d) => device_of(&ctx, d.get_ref())?,
            None => Device::default(),
        };
        let age = match &t.age {
            None => None,
            Some(a) => {
                let a_span = a.span();
                let a = a.get_ref();
                let fill = a.fill.as_ref().map_or(0.8, |f| *f.get_ref());
                if let Some(f) = &a.fill {
                    if !(f.get_ref().is_finite() && *f.get_ref() > 0.0 && *f.get_ref() < 1.0) {
                        return Err(ctx.err(f.span(), "fill: expected a fraction between 0 and 1"));
                    }
                }
                let ops = match (quick, &a.quick_ops, &a.ops) {
                    (true, Some(q), _) => *q.get_ref(),
                    (_, _, Some(o)) => *o.get_ref(),
                    _ => {
                        return Err(ctx.err(
                            a_span,
                            "age needs `ops` (operations after the target fullness)",
                        ))
                    }
                };
                let per = match a.per.as_ref().map(|p| (p.get_ref().as_str(), p.span())) {
                    None | Some(("target", _)) => AgePer::Target,
                    Some(("repetition", _)) => AgePer::Repetition,
                    Some((p, s)) => {
                        return Err(ctx.err(
                            s,
                            format!("per {p:?}: expected \"target\" or \"repetition\""),
                        ))
                    }
                };
                let profile = a.profile.clone().unwrap_or_else(|| "agrawal".into());
                if crate::age::profile::Profile::builtin(&profile).is_err() {
                    return Err(ctx.err(a_span, format!("age profile {profile:?} is not built in")));
                }
                Some(Age {
                    profile,
                    fill,
                    ops,
                    seed: a.seed,
                    per,
                })
            }
        };
        targets.push(Target {
            name: tname,
            kind,
            device,
            age,
        });
        target_spans.push(t_span);
    }
    // Overlays name an existing target, without cycles.
    for (i, t) in targets.iter().enumerate() {
        if let TargetKind::Overlay { over } = &t.kind {
            let mut seen = vec![t.name.clone()];
            let mut cur = over.clone();
            loop {
                if seen.contains(&cur) {
                    return Err(ctx.err(
                        target_spans[i].clone(),
                        format!(
                            "overlay {:?}: `over` makes a cycle ({} -> {cur})",
                            t.name,
                            seen.join(" -> ")
                        ),
                    ));
                }
                let Some(o) = targets.iter().find(|o| o.name == cur) else {
                    return Err(ctx.err(
                        target_spans[i].clone(),
                        format!("overlay {:?}: `over` names no target {cur:?}", t.name),
                    ));
                };
                seen.push(cur.clone());
                match &o.kind {
                    TargetKind::Overlay { over } => cur = over.clone(),
                    _ => break,
                }
            }
        }
    }

    // Factors shared by every measurement.
    let target_levels: Vec<String> = match &raw.factors.target {
        Some(l) => {
            if l.get_ref().is_empty() {
                return Err(ctx.err(l.span(), "factor `target` needs at least one level"));
            }
            let mut v = Vec::new();
            for n in l.get_ref() {
                if !targets.iter().any(|t| &t.name == n.get_ref()) {
                    return Err(ctx.err(n.span(), format!("no target named {:?}", n.get_ref())));
                }
                if v.contains(n.get_ref()) {
                    return Err(ctx.err(n.span(), "level listed twice"));
                }
                v.push(n.get_ref().clone());
            }
            v
        }
        None => {
            if targets.len() != 1 {
                return Err(PlanError(format!(
                    "{}: with {} targets, [factors] needs `target = [...]` naming the ones to measure in",
                    file.display(),
                    targets.len()
                )));
            }
            vec![targets[0].name.clone()]
        }
    };
    let cache_levels: Vec<String> = match &raw.factors.cache {
        Some(l) => {
            let mut v = Vec::new();
            for c in l.get_ref() {
                if !["cold", "warm", "remount"].contains(&c.get_ref().as_str()) {
                    return Err(ctx.err(c.span(), format!("cache {:?}: expected \"cold\" (sync and drop caches before each measurement), \"remount\" (unmount and mount the target's file system) or \"warm\"", c.get_ref())));
                }
                if c.get_ref() == "remount" {
                    // Only what fsbench mounted can be unmounted and mounted again.
                    for tn in &target_levels {
                        let t = targets
                            .iter()
                            .find(|t| &t.name == tn)
                            .expect("checked level");
                        if let TargetKind::Dir { path } = &t.kind {
                            return Err(ctx.err(c.span(), format!("cache \"remount\": target {tn} is an existing directory ({}), which fsbench does not mount; remount needs image, disk or overlay targets (or use \"cold\")", path.display())));
                        }
                        if let TargetKind::Remote { .. } = &t.kind {
                            return Err(ctx.err(c.span(), format!("cache \"remount\": target {tn} is a remote; use \"cold\", which empties its client cache")));
                        }
                    }
                }
                v.push(c.get_ref().clone());
            }
            if v.is_empty() {
                return Err(ctx.err(l.span(), "factor `cache` needs at least one level"));
            }
            v
        }
        None => vec!["warm".into()],
    };

    // Device settings as factors.
    let mut devices = BTreeMap::new();
    for (dn, d) in &raw.devices {
        if dn.is_empty()
            || !dn
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(ctx.err(
                d.span(),
                format!("device profile name {dn:?}: use letters, digits, '-', '_' and '.'"),
            ));
        }
        let dev = device_of(&ctx, d.get_ref())?;
        if dev.is_empty() {
            return Err(ctx.err(d.span(), format!("device profile {dn} sets nothing")));
        }
        devices.insert(dn.clone(), (dev, d.span()));
    }
    let mut setting_levels: Vec<(String, Vec<String>)> = Vec::new();
    let mut add_levels = |key: &str,
                          span: std::ops::Range<usize>,
                          levels: Vec<(String, std::ops::Range<usize>)>|
     -> Result<(), PlanError> {
        if levels.is_empty() {
            return Err(ctx.err(span, format!("factor `{key}` needs at least one level")));
        }
        let mut v: Vec<String> = Vec::new();
        for (l, sp) in levels {
            if v.contains(&l) {
                return Err(ctx.err(sp, "level listed twice"));
            }
            v.push(l);
        }
        setting_levels.push((key.to_string(), v));
        Ok(())
    };
    let f = &raw.factors;
    if let Some(l) = &f.device {
        let mut v = Vec::new();
        for d in l.get_ref() {
            if !devices.contains_key(d.get_ref()) {
                let have: Vec<&String> = devices.keys().collect();
                return Err(ctx.err(
                    d.span(),
                    format!(
                        "device {:?}: no [devices.{}] table in the plan{}",
                        d.get_ref(),
                        d.get_ref(),
                        if have.is_empty() {
                            String::new()
                        } else {
                            format!(
                                " (profiles: {})",
                                have.iter()
                                    .map(|s| s.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        }
                    ),
                ));
            }
            v.push((d.get_ref().clone(), d.span()));
        }
        add_levels("device", l.span(), v)?;
    } else if let Some((dn, (_, sp))) = devices.iter().next() {
        return Err(ctx.err(
            sp.clone(),
            format!("[devices.{dn}] is a level of the `device` factor, which the plan does not have: add `device = [\"{dn}\", ...]` under [factors]"),
        ));
    }
    if let Some(l) = &f.scheduler {
        let mut v = Vec::new();
        for x in l.get_ref() {
            if !["none", "mq-deadline", "bfq", "kyber"].contains(&x.get_ref().as_str()) {
                return Err(ctx.err(
                    x.span(),
                    "scheduler: expected none, mq-deadline, bfq or kyber",
                ));
            }
            v.push((x.get_ref().clone(), x.span()));
        }
        add_levels("scheduler", l.span(), v)?;
    }
    for (key, l) in [
        ("read_ahead_kb", &f.read_ahead_kb),
        ("nr_requests", &f.nr_requests),
    ] {
        if let Some(l) = l {
            let v = l
                .get_ref()
                .iter()
                .map(|x| (x.get_ref().to_string(), x.span()))
                .collect();
            add_levels(key, l.span(), v)?;
        }
    }
    if let Some(l) = &f.rotational {
        let v = l
            .get_ref()
            .iter()
            .map(|x| (x.get_ref().to_string(), x.span()))
            .collect();
        add_levels("rotational", l.span(), v)?;
    }
    // Remote settings as factors: every target measured must be a remote.
    let remote_factor_span = f
        .network
        .as_ref()
        .map(|l| l.span())
        .or(f.lookaside.as_ref().map(|l| l.span()));
    if let Some(span) = remote_factor_span {
        for tn in &target_levels {
            let t = targets
                .iter()
                .find(|t| &t.name == tn)
                .expect("checked level");
            if !matches!(t.kind, TargetKind::Remote { .. }) {
                return Err(ctx.err(
                    span,
                    format!("`network` and `lookaside` factors apply to remote targets, and target {tn} is of kind {}", t.kind_name()),
                ));
            }
        }
    }
    if let Some(l) = &f.network {
        let mut v = Vec::new();
        for x in l.get_ref() {
            check_network(x.get_ref()).map_err(|e| ctx.err(x.span(), e))?;
            v.push((x.get_ref().clone(), x.span()));
        }
        add_levels("network", l.span(), v)?;
    }
    if let Some(l) = &f.lookaside {
        let mut v = Vec::new();
        for x in l.get_ref() {
            let la = lookaside_of(&ctx, x, &base_dir)?;
            v.push((Lookaside::level(la.as_ref()), x.span()));
        }
        add_levels("lookaside", l.span(), v)?;
    }
    // A setting is varied in one place: a single-setting factor or the profiles.
    for (key, span) in [
        ("scheduler", f.scheduler.as_ref().map(|l| l.span())),
        ("read_ahead_kb", f.read_ahead_kb.as_ref().map(|l| l.span())),
        ("nr_requests", f.nr_requests.as_ref().map(|l| l.span())),
        ("rotational", f.rotational.as_ref().map(|l| l.span())),
    ] {
        let Some(span) = span else { continue };
        for (dn, (d, _)) in &devices {
            let sets = match key {
                "scheduler" => d.scheduler.is_some(),
                "read_ahead_kb" => d.read_ahead_kb.is_some(),
                "nr_requests" => d.nr_requests.is_some(),
                _ => d.rotational.is_some(),
            };
            if sets {
                return Err(ctx.err(
                    span,
                    format!("`{key}` is a factor and device profile {dn} sets it too: vary it in one place"),
                ));
            }
        }
    }
    let devices: BTreeMap<String, Device> = devices.into_iter().map(|(k, (d, _))| (k, d)).collect();

    // Measurements.
    if raw.measurements.is_empty() {
        return Err(PlanError(format!(
            "{}: the plan has no [[measurement]]",
            file.display()
        )));
    }
    let mut measurements: Vec<Measurement> = Vec::new();
    for m in &raw.measurements {
        let m_span = m.span();
        let m = m.get_ref();
        let mname = m.name.get_ref().clone();
        if measurements.iter().any(|o| o.name == mname) {
            return Err(ctx.err(
                m.name.span(),
                format!("measurement {mname:?} is defined twice"),
            ));
        }
        let kind = Kind::ALL
            .iter()
            .find(|(n, _)| n == m.kind.get_ref())
            .map(|(_, k)| *k)
            .ok_or_else(|| {
                ctx.err(
                    m.kind.span(),
                    format!(
                        "measurement kind {:?}: expected one of {}",
                        m.kind.get_ref(),
                        Kind::ALL.map(|(n, _)| n).join(", ")
                    ),
                )
            })?;
        if kind == Kind::Replay && !m.params.contains_key("trace") {
            return Err(ctx.err(
                m_span.clone(),
                "a replay measurement needs params.trace (a trace file from `fsbench trace record`, relative to the plan)",
            ));
        }
        // A workload's variables are parameters too; check them against the workload.
        let workload_vars: Option<Vec<String>> = if kind == Kind::Workload {
            let w = m.params.get("workload").ok_or_else(|| {
                ctx.err(
                    m_span.clone(),
                    "a workload measurement needs params.workload (a .f file or a built-in name)",
                )
            })?;
            let wname = typed(&ctx, w, Ty::Str, "workload")?;
            let resolved = if crate::workloads::builtin(&wname).is_some() {
                wname.clone()
            } else {
                base_dir.join(&wname).display().to_string()
            };
            match crate::workloads::load(&resolved, &crate::model::Overrides::default()) {
                Ok((wl, _)) => Some(wl.vars.iter().map(|(k, _)| k.clone()).collect()),
                Err(e) => return Err(ctx.err(w.span(), format!("workload {wname:?}: {e}"))),
            }
        } else {
            None
        };
        let check_key = |k: &str, span: std::ops::Range<usize>| -> Result<Ty, PlanError> {
            if let Some(p) = kind.param(k) {
                return Ok(p.3);
            }
            if let Some(vars) = &workload_vars {
                if vars.iter().any(|v| v == k) && k != "dir" {
                    return Ok(Ty::Str);
                }
                return Err(ctx.err(span, format!("`{k}` is neither a parameter of a workload measurement ({}) nor a variable of the workload ({})", kind.params().iter().map(|p| p.0).collect::<Vec<_>>().join(", "), vars.iter().filter(|v| *v != "dir").cloned().collect::<Vec<_>>().join(", "))));
            }
            Err(ctx.err(
                span,
                format!(
                    "`{k}` is not a parameter of a {} measurement (it takes: {})",
                    kind.name(),
                    kind.params()
                        .iter()
                        .map(|p| p.0)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ))
        };
        let scalar_for = |k: &str, v: &Spanned<toml::Value>, ty: Ty| -> Result<String, PlanError> {
            if workload_vars.is_some() && kind.param(k).is_none() {
                // A variable: any scalar the language accepts.
                return scalar(v.get_ref()).ok_or_else(|| {
                    ctx.err(
                        v.span(),
                        format!("variable `{k}`: expected a number, string or boolean"),
                    )
                });
            }
            typed(&ctx, v, ty, k)
        };
        // Parameters naming a file (a workload that is not built in, PostMark's
        // configuration, a trace) are relative to the plan and must exist.
        let resolve_file = |k: &str, s: &mut String, v: &Spanned<toml::Value>| {
            let names_file = (kind == Kind::Postmark && k == "config")
                || (kind == Kind::Replay && k == "trace")
                || (kind == Kind::Workload
                    && k == "workload"
                    && crate::workloads::builtin(s).is_none());
            if names_file {
                let p = base_dir.join(&*s);
                if !p.is_file() {
                    return Err(ctx.err(v.span(), format!("{} is not a file", p.display())));
                }
                *s = p.display().to_string();
            }
            // Places the runner joins to the target's directory: inside the target only.
            if matches!(kind.param(k), Some((_, _, Arg::Runner, _)))
                && ["path", "src", "over"].contains(&k)
            {
                let inside = std::path::Path::new(&*s).components().all(|c| {
                    matches!(
                        c,
                        std::path::Component::Normal(_) | std::path::Component::CurDir
                    )
                });
                if !inside {
                    return Err(ctx.err(
                        v.span(),
                        format!(
                            "{k} {s:?}: a path inside the target, relative to it, without `..`"
                        ),
                    ));
                }
            }
            Ok(())
        };
        let mut params: Vec<(String, String)> = Vec::new();
        for (k, v) in &m.params {
            let ty = check_key(k, v.span())?;
            let mut s = scalar_for(k, v, ty)?;
            if kind == Kind::Replay
                && k == "mode"
                && !["timed", "afap", "deps"].contains(&s.as_str())
            {
                return Err(ctx.err(v.span(), "mode: expected \"timed\", \"afap\" or \"deps\""));
            }
            resolve_file(k, &mut s, v)?;
            params.push((k.clone(), s));
        }
        if quick {
            for (k, v) in &m.quick {
                let ty = check_key(k, v.span())?;
                let mut s = scalar_for(k, v, ty)?;
                resolve_file(k, &mut s, v)?;
                match params.iter_mut().find(|(pk, _)| pk == k) {
                    Some(p) => p.1 = s,
                    None => params.push((k.clone(), s)),
                }
            }
        } else {
            for (k, v) in &m.quick {
                check_key(k, v.span())?;
            }
        }
        let mut factors: Vec<(String, Vec<String>)> = Vec::new();
        let read_factors = |src: &BTreeMap<String, Spanned<Vec<Spanned<toml::Value>>>>| -> Result<Vec<(String, Vec<String>)>, PlanError> {
            let mut out = Vec::new();
            for (k, levels) in src {
                if ["target", "cache", "measurement"].contains(&k.as_str())
                    || SETTING_FACTORS.contains(&k.as_str())
                    || REMOTE_FACTORS.contains(&k.as_str())
                {
                    return Err(ctx.err(levels.span(), format!("`{k}` is a plan-wide factor: list it under [factors]")));
                }
                if matches!(kind.param(k), Some((_, _, Arg::Positional, _)) | Some((_, _, Arg::Runner, _))) {
                    return Err(ctx.err(levels.span(), format!("`{k}` cannot be a factor (it chooses what is measured, not how); use a second [[measurement]]")));
                }
                let ty = check_key(k, levels.span())?;
                if levels.get_ref().is_empty() {
                    return Err(ctx.err(levels.span(), format!("factor `{k}` needs at least one level")));
                }
                let mut v: Vec<String> = Vec::new();
                for l in levels.get_ref() {
                    let s = scalar_for(k, l, ty)?;
                    if v.contains(&s) {
                        return Err(ctx.err(l.span(), "level listed twice"));
                    }
                    v.push(s);
                }
                out.push((k.clone(), v));
            }
            Ok(out)
        };
        let full = read_factors(&m.factors)?;
        let q = read_factors(&m.quick_factors)?;
        for (k, levels) in full {
            factors.push((k, levels));
        }
        if quick {
            for (k, levels) in q {
                match factors.iter_mut().find(|(fk, _)| *fk == k) {
                    Some(f) => f.1 = levels,
                    None => factors.push((k, levels)),
                }
            }
        }
        for (k, _) in &factors {
            if let Some(i) = params.iter().position(|(pk, _)| pk == k) {
                params.remove(i);
            }
        }
        if kind == Kind::Find
            && params.iter().any(|(k, _)| k == "tree_dirs")
            && !params.iter().any(|(k, _)| k == "tree_files")
        {
            return Err(ctx.err(m_span.clone(), "find: tree_dirs needs tree_files"));
        }
        measurements.push(Measurement {
            name: mname,
            kind,
            params,
            factors,
        });
    }

    let factor_levels = |k: &str| -> Option<Vec<String>> {
        match k {
            "measurement" => Some(measurements.iter().map(|m| m.name.clone()).collect()),
            "target" => Some(target_levels.clone()),
            "cache" => Some(cache_levels.clone()),
            k if SETTING_FACTORS.contains(&k) || REMOTE_FACTORS.contains(&k) => setting_levels
                .iter()
                .find(|(f, _)| f == k)
                .map(|(_, l)| l.clone()),
            _ => {
                let mut all: Vec<String> = Vec::new();
                let mut found = false;
                for m in &measurements {
                    if let Some((_, l)) = m.factors.iter().find(|(f, _)| f == k) {
                        found = true;
                        all.extend(l.iter().cloned());
                    }
                }
                found.then_some(all)
            }
        }
    };
    let check_level = |k: &Spanned<String>,
                       v: &Spanned<toml::Value>,
                       what: &str|
     -> Result<(String, String), PlanError> {
        let levels = factor_levels(k.get_ref()).ok_or_else(|| {
            ctx.err(
                k.span(),
                format!("{what}: `{}` is not a factor of this plan", k.get_ref()),
            )
        })?;
        let s = scalar(v.get_ref())
            .ok_or_else(|| ctx.err(v.span(), "expected a level (number, string or boolean)"))?;
        if !levels.contains(&s) {
            return Err(ctx.err(
                v.span(),
                format!(
                    "{what}: {s:?} is not a level of `{}` (levels: {})",
                    k.get_ref(),
                    levels.join(", ")
                ),
            ));
        }
        Ok((k.get_ref().clone(), s))
    };
    let mut baseline = Vec::new();
    for (k, v) in &x.baseline {
        baseline.push(check_level(k, v, "baseline")?);
    }
    let mut excludes = Vec::new();
    for e in &raw.excludes {
        let mut c = Vec::new();
        for (k, v) in e {
            c.push(check_level(k, v, "exclude")?);
        }
        excludes.push(c);
    }

    Ok(Plan {
        file: file.to_path_buf(),
        text: text.to_string(),
        name,
        description: x.description.clone(),
        seed: x.seed,
        repetitions,
        order,
        fresh,
        time_limit_s: time_limit,
        noise_threshold,
        warmup_runs: x.warmup_runs,
        baseline,
        targets,
        measurements,
        target_levels,
        cache_levels,
        setting_levels,
        devices,
        excludes,
        quick,
    })
}

impl Plan {
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
            if let TargetKind::Overlay { over } = &t.kind {
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
lookaside = ["none", 1.0, 0.25]

[[measurement]]
name = "b"
kind = "build"
params = { src = "." }
"#;

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
                    vec!["none".to_string(), "1".into(), "0.25".into()]
                ),
            ]
        );
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
        bad("0.25]", "1.5]", "a share of files in common");
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
        let e = p(&OK.replace("kind = \"dir\"", "kind = \"nfs\""))
            .unwrap_err()
            .0;
        assert!(e.contains("t.toml:9:8: target kind \"nfs\""), "{e}");
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
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }
}
