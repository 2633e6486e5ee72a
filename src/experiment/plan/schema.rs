//! The TOML schema of a plan: what serde reads, before any check beyond types.

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPlan {
    pub(super) experiment: RawExperiment,
    #[serde(default, rename = "target")]
    pub(super) targets: Vec<Spanned<RawTarget>>,
    #[serde(default, rename = "measurement")]
    pub(super) measurements: Vec<Spanned<RawMeasurement>>,
    #[serde(default)]
    pub(super) factors: RawFactors,
    /// Named device-setting profiles, levels of the `device` factor.
    #[serde(default)]
    pub(super) devices: BTreeMap<String, Spanned<RawDevice>>,
    #[serde(default, rename = "exclude")]
    pub(super) excludes: Vec<BTreeMap<Spanned<String>, Spanned<toml::Value>>>,
    #[serde(default)]
    pub(super) quick: RawQuick,
    /// Loads run beside a measurement, levels of a measurement's background factor.
    #[serde(default, rename = "background")]
    pub(super) backgrounds: Vec<Spanned<RawBackground>>,
    /// The paper's figures, each with the rule that judges ours against it.
    #[serde(default, rename = "published")]
    pub(super) published: Vec<Spanned<RawPublished>>,
}

/// Only the `[[published]]` entries of a plan's text (the rest ignored): what `fsbench
/// results` reads of a stored plan.
#[derive(Deserialize)]
pub(super) struct PublishedOnly {
    #[serde(default)]
    pub(super) published: Vec<Spanned<RawPublished>>,
}

/// `compare`'s table: factor → { level = the level it is compared with }.
pub(super) type CompareTable =
    BTreeMap<Spanned<String>, BTreeMap<Spanned<String>, Spanned<toml::Value>>>;

/// One `[[published]]` entry as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPublished {
    /// A short label of the paper's claim, shown beside the verdict.
    pub(super) claim: Option<Spanned<String>>,
    pub(super) measurement: Option<Spanned<String>>,
    pub(super) figure: Spanned<String>,
    /// The comparison, as `compare` writes one pair: { FACTOR = { LEVEL = OTHER } }.
    pub(super) compare: Option<Spanned<CompareTable>>,
    /// The other factors' levels the figure is at (unnamed factors: every level).
    #[serde(default)]
    pub(super) at: BTreeMap<Spanned<String>, Spanned<toml::Value>>,
    /// The paper's ratio (a comparison) or value (a cell's figure).
    pub(super) ratio: Option<Spanned<f64>>,
    pub(super) value: Option<Spanned<f64>>,
    /// The rule: one of these three.
    pub(super) direction: Option<Spanned<String>>,
    pub(super) within: Option<Spanned<f64>>,
    pub(super) range: Option<Spanned<Vec<Spanned<f64>>>>,
    /// Why the plan cannot measure it yet (a target still to come): its levels are not
    /// checked, and it is judged once they exist.
    pub(super) pending: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBackground {
    pub(super) name: Spanned<String>,
    /// The factor whose level this background is ("background" unless named).
    pub(super) factor: Option<Spanned<String>>,
    /// "command", or a measurement kind.
    pub(super) kind: Spanned<String>,
    /// A command's argument vector (kind = "command").
    pub(super) command: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub(super) params: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    pub(super) quick: BTreeMap<String, Spanned<toml::Value>>,
    pub(super) nice: Option<Spanned<i64>>,
    pub(super) ionice: Option<Spanned<String>>,
    /// "after" (stopped after the measurement, the default) or "end" (runs to its end).
    pub(super) stop: Option<Spanned<String>>,
    /// Start it again each time it ends, until the measurement has ended.
    pub(super) restart: Option<Spanned<bool>>,
    /// "before" (its window starts, then the measurement's preparation) or "with" (its
    /// window waits for the measurement's).
    pub(super) start: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExperiment {
    pub(super) name: Spanned<String>,
    #[serde(default)]
    pub(super) description: String,
    #[serde(default = "one")]
    pub(super) seed: u64,
    /// A count, or `{ min, max, ci }` (adaptive).
    pub(super) repetitions: Spanned<toml::Value>,
    #[serde(default)]
    pub(super) order: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) fresh: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) time_limit: Option<Spanned<f64>>,
    #[serde(default)]
    pub(super) noise_threshold: Option<Spanned<f64>>,
    #[serde(default)]
    pub(super) warmup_runs: u32,
    #[serde(default)]
    pub(super) baseline: BTreeMap<Spanned<String>, Spanned<toml::Value>>,
    /// Pairs of levels compared besides the baseline: factor → { level = the level it is
    /// compared with }.
    #[serde(default)]
    pub(super) compare: CompareTable,
    /// The share of the bytes a measurement read that its device must serve, below which a
    /// cold or device run is flagged `cache_served`.
    #[serde(default)]
    pub(super) cache_served_share: Option<Spanned<f64>>,
    /// `"leave"` (the default) or `"pause"`: the kernel's DAMON reclaimers paused while the
    /// experiment is set up.
    #[serde(default)]
    pub(super) proactive_reclaim: Option<Spanned<String>>,
}

fn one() -> u64 {
    1
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawQuick {
    pub(super) repetitions: Option<Spanned<u32>>,
    pub(super) time_limit: Option<Spanned<f64>>,
    /// Plan-wide factor levels under --quick (each replaces the full scale's levels).
    pub(super) factors: Option<RawFactors>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFactors {
    pub(super) target: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) cache: Option<Spanned<Vec<Spanned<String>>>>,
    /// Device settings as factors: named `[devices.NAME]` profiles, or single settings.
    pub(super) device: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) scheduler: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) read_ahead_kb: Option<Spanned<Vec<Spanned<u64>>>>,
    pub(super) nr_requests: Option<Spanned<Vec<Spanned<u64>>>>,
    pub(super) rotational: Option<Spanned<Vec<Spanned<bool>>>>,
    /// Remote settings as factors: the network, the lookaside tree.
    pub(super) network: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) lookaside: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    /// The measured child's memory limit as a factor (sizes, or "none").
    pub(super) memory: Option<Spanned<Vec<Spanned<toml::Value>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTarget {
    pub(super) name: Spanned<String>,
    pub(super) kind: Spanned<String>,
    pub(super) path: Option<Spanned<String>>,
    pub(super) size: Option<Spanned<String>>,
    /// The size at --quick scale.
    pub(super) quick_size: Option<Spanned<String>>,
    pub(super) fs: Option<Spanned<String>>,
    pub(super) mkfs_options: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) mount_options: Option<Spanned<String>>,
    pub(super) over: Option<Spanned<String>>,
    /// An overlay's trees in its lower layer, their directories in both layers.
    pub(super) merged: Option<Spanned<bool>>,
    pub(super) model: Option<Spanned<String>>,
    pub(super) disk: Option<Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    pub(super) device: Option<Spanned<RawDevice>>,
    pub(super) age: Option<Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    // Remote targets.
    pub(super) server: Option<Spanned<String>>,
    pub(super) source: Option<Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    pub(super) quick_source: Option<Spanned<BTreeMap<String, Spanned<toml::Value>>>>,
    pub(super) network: Option<Spanned<String>>,
    pub(super) protocol: Option<Spanned<String>>,
    pub(super) cache_size: Option<Spanned<String>>,
    pub(super) lookaside: Option<Spanned<toml::Value>>,
    pub(super) writable: Option<Spanned<bool>>,
    /// An NFS target's protocol version (3 or 4).
    pub(super) version: Option<Spanned<u32>>,
    /// The measured child's memory limit on this target (a size, or "none").
    pub(super) memory: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDevice {
    pub(super) scheduler: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) tunables: BTreeMap<String, Spanned<toml::Value>>,
    pub(super) read_ahead_kb: Option<Spanned<u64>>,
    pub(super) nr_requests: Option<Spanned<u64>>,
    pub(super) rotational: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMeasurement {
    pub(super) name: Spanned<String>,
    pub(super) kind: Spanned<String>,
    #[serde(default)]
    pub(super) params: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    pub(super) quick: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    pub(super) factors: BTreeMap<String, Spanned<Vec<Spanned<toml::Value>>>>,
    #[serde(default)]
    pub(super) quick_factors: BTreeMap<String, Spanned<Vec<Spanned<toml::Value>>>>,
    /// The headline figures, instead of the kind's.
    #[serde(default)]
    pub(super) figures: Option<Spanned<Vec<Spanned<String>>>>,
    /// The measured child's memory limit (a size, or "none"); as `params.memory`.
    pub(super) memory: Option<Spanned<toml::Value>>,
    /// The device must do the work: runs below this utilisation, or above this share of
    /// reads from the page cache, are flagged `device_idle`.
    pub(super) device_work: Option<Spanned<RawDeviceWork>>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDeviceWork {
    pub(super) busy_min: Option<Spanned<f64>>,
    pub(super) cache_hit_max: Option<Spanned<f64>>,
}
