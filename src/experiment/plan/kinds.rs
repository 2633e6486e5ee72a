//! What a measurement kind is and the parameters each takes, with the command-line flag
//! each parameter becomes.

use clap::{Args, Command};
use fsbench_engine::layout::LayoutArgs;
use fsbench_engine::scan::ScanArgs;
use fsbench_tools::apps::cli::{AndrewArgs, BuildArgs, FindArgs, PostmarkArgs, ReadArgs};
use fsbench_tools::trace::replay::ReplayArgs;
use std::any::TypeId;
use std::sync::OnceLock;

/// The plan type of a flag's value, from the type its parser yields.
pub(super) fn value_type(a: &clap::Arg) -> Ty {
    let t = a.get_value_parser().type_id();
    let ints = [
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
    ];
    if ints.iter().any(|i| t == *i) {
        Ty::Int
    } else if t == TypeId::of::<f64>() || t == TypeId::of::<f32>() {
        Ty::Float
    } else if t == TypeId::of::<bool>() {
        Ty::Bool
    } else {
        Ty::Str
    }
}

/// A subcommand's command line as clap defines it.
pub(super) fn cmd<A: Args>() -> Command {
    A::augment_args(Command::new("plan"))
}

/// Flags the runner sets from the cell (place, output, repetitions, cache state), never
/// a plan.
const RUNNER_FLAGS: &[&str] = &[
    "dir",
    "location",
    "force_location",
    "report",
    "keep",
    "json",
    "csv",
    "markdown",
    "repeat",
    "warmup",
    "cold",
    "output",
    "one_file_system",
    "cross_mounts",
    "top",
    "hash",
    "roots",
    "over",
    "show_mismatches",
];

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
    Read,
    Prune,
    Hot,
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

/// Every kind's `memory` parameter: the measured child's memory limit (a size, or "none"),
/// applied by the runner through a memory cgroup.
pub const MEMORY: Param = ("memory", "", Arg::Runner, Ty::Str);

/// A workload's `nfs = true`: it runs over the NFS target's URL (`fsbench run --nfs`).
pub const NFS: Param = ("nfs", "", Arg::Runner, Ty::Bool);

/// What stands for the NFS target's URL in a workload's command until the target is up.
pub const NFS_URL: &str = "{nfs_url}";

impl Kind {
    /// Why a cold cache cannot change much of what this kind measures, when it reads
    /// nothing that was on disk before its measured window; `None` when it reads what was
    /// laid out before (a workload's depends on the workload: see
    /// [`fsbench_model::model::Workload::creates_all_it_reads`]).
    pub fn cache_blind(self) -> Option<&'static str> {
        match self {
            Kind::Postmark => Some(fsbench_tools::apps::postmark::READS_ITS_OWN_POOL),
            _ => None,
        }
    }

    pub const ALL: [(&'static str, Kind); 11] = [
        ("workload", Kind::Workload),
        ("postmark", Kind::Postmark),
        ("andrew", Kind::Andrew),
        ("find", Kind::Find),
        ("build", Kind::Build),
        ("layout", Kind::Layout),
        ("scan", Kind::Scan),
        ("replay", Kind::Replay),
        ("read", Kind::Read),
        ("prune", Kind::Prune),
        ("hot", Kind::Hot),
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

    /// Whether the kind's child takes `--cold` and `--warmup` (the measurement harness's
    /// options, or `fsbench run`'s): layout and scan take neither, and the runner drops the
    /// caches and runs their warm-up pass itself.
    pub fn takes_cold(self) -> bool {
        !matches!(self, Kind::Layout | Kind::Scan)
    }

    /// Whether the bytes a kind reads are judged against its device's reads (`cache_served`):
    /// a workload's, `read`'s and a replay's reads are of data that was there before they
    /// started; PostMark, Andrew and the build read mostly what they wrote in the same run,
    /// which the page cache serves on any machine, and `find`, `layout` and `scan` read
    /// metadata only.
    pub fn judges_device_reads(self) -> bool {
        matches!(self, Kind::Workload | Kind::Read | Kind::Replay | Kind::Hot)
    }

    /// Whether a kind walks a tree the runner can make (`tree_files`).
    pub fn makes_tree(self) -> bool {
        matches!(self, Kind::Find | Kind::Read)
    }

    /// The parameters this kind accepts: every flag of its subcommand's command line (the
    /// same clap definitions, so a new flag is a plan parameter too), less the ones the runner
    /// sets itself, plus what the runner turns into a place or a generated tree, and
    /// [`MEMORY`]. A workload also takes its own variables (checked against the workload
    /// itself).
    pub fn params(self) -> &'static [Param] {
        static TABLES: OnceLock<Vec<Vec<Param>>> = OnceLock::new();
        let tables =
            TABLES.get_or_init(|| Kind::ALL.iter().map(|(_, k)| k.build_params()).collect());
        let i = Kind::ALL.iter().position(|(_, k)| *k == self).unwrap();
        &tables[i]
    }

    fn build_params(self) -> Vec<Param> {
        use Arg::*;
        use Ty::*;
        let (cmd, positional, runner): (Option<Command>, &[&str], &[(&str, Ty)]) = match self {
            // `fsbench run`'s options live with the binary: its plan parameters are these.
            Kind::Workload => {
                return vec![
                    ("workload", "", Positional, Str),
                    ("duration", "--duration", Value, Float),
                    ("warmup", "--warmup", Value, Float),
                    ("seed", "--seed", Value, Int),
                    ("layout", "--layout", Switch, Bool),
                    // The page cache as the reads meet it (`read_hit_pct`).
                    ("cache_stat", "--cache-stat", Switch, Bool),
                    // Over the NFS target's URL through libnfs (`run --nfs`), not in its
                    // exported directory; and what `run` counts and dials there.
                    NFS,
                    ("nfs_rpcs", "--nfs-rpcs", Switch, Bool),
                    ("nfs_bandwidth", "--nfs-bandwidth", Value, Str),
                    ("nfs_rtt", "--nfs-rtt", Value, Str),
                    MEMORY,
                ];
            }
            Kind::Postmark => (self.command(), &["config"], &[]),
            Kind::Andrew => (self.command(), &[], &[]),
            Kind::Find => (
                self.command(),
                &[],
                &[
                    ("path", Str),
                    ("tree_files", Int),
                    ("tree_dirs", Int),
                    ("tree_file_size", Str),
                ],
            ),
            Kind::Read => (
                self.command(),
                &[],
                &[
                    ("path", Str),
                    ("tree_files", Int),
                    ("tree_dirs", Int),
                    ("tree_file_size", Str),
                ],
            ),
            Kind::Build => (self.command(), &[], &[("src", Str)]),
            Kind::Layout => (self.command(), &[], &[("path", Str)]),
            // The hot files of the target's own aging (its `[target.age]`).
            Kind::Hot => (self.command(), &[], &[]),
            Kind::Replay => (self.command(), &["trace"], &[("over", Str)]),
            Kind::Scan => (self.command(), &[], &[("path", Str)]),
            // Only the self-contained form: a tree made in a run directory in the target.
            Kind::Prune => (self.command(), &[], &[]),
        };
        let mut out: Vec<Param> = Vec::new();
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        for a in cmd.iter().flat_map(|c| c.get_arguments()) {
            let id = a.get_id().as_str();
            if a.is_positional() {
                if positional.contains(&id) {
                    out.push((leak(id.to_string()), "", Positional, Str));
                }
                continue;
            }
            let Some(long) = a.get_long() else { continue };
            if RUNNER_FLAGS.contains(&id) || a.is_hide_set() || id == "help" {
                continue;
            }
            // A plan prunes only the tree its own run directory holds.
            if self == Kind::Prune && ["root", "really_delete_under"].contains(&id) {
                continue;
            }
            let flag = leak(format!("--{long}"));
            let name = leak(long.replace('-', "_"));
            let switch = matches!(a.get_action(), clap::ArgAction::SetTrue);
            if switch {
                out.push((name, flag, Switch, Bool));
                continue;
            }
            if !matches!(a.get_action(), clap::ArgAction::Set) {
                continue;
            }
            let ty = value_type(a);
            out.push((name, flag, Value, ty));
        }
        for (name, ty) in runner {
            out.retain(|p| p.0 != *name);
            out.push((name, "", Runner, *ty));
        }
        out.push(MEMORY);
        out
    }

    /// The command line of the subcommand that measures this kind, as clap defines it (`run`'s
    /// lives with the binary: none).
    fn command(self) -> Option<Command> {
        Some(match self {
            Kind::Postmark => cmd::<PostmarkArgs>(),
            Kind::Andrew => cmd::<AndrewArgs>(),
            Kind::Find => cmd::<FindArgs>(),
            Kind::Build => cmd::<BuildArgs>(),
            Kind::Layout => cmd::<LayoutArgs>(),
            Kind::Replay => cmd::<ReplayArgs>(),
            Kind::Scan => cmd::<ScanArgs>(),
            Kind::Read => cmd::<ReadArgs>(),
            Kind::Prune => cmd::<fsbench_tools::apps::prune::PruneArgs>(),
            Kind::Hot => cmd::<fsbench_tools::age::hot::HotArgs>(),
            Kind::Workload => return None,
        })
    }

    /// The values a string parameter takes, when its flag lists them (`--mode timed|afap|deps`).
    pub fn choices(self, name: &str) -> Option<Vec<String>> {
        let cmd = self.command()?;
        let a = cmd
            .get_arguments()
            .find(|a| a.get_long().map(|l| l.replace('-', "_")).as_deref() == Some(name))?;
        let v: Vec<String> = a
            .get_possible_values()
            .iter()
            .filter(|p| !p.is_hide_set())
            .map(|p| p.get_name().to_string())
            .collect();
        (!v.is_empty()).then_some(v)
    }

    pub fn param(self, name: &str) -> Option<&'static Param> {
        self.params().iter().find(|p| p.0 == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_come_from_the_subcommands_flags() {
        let p = Kind::Build.param("source_size").unwrap();
        assert_eq!((p.1, p.2, p.3), ("--source-size", Arg::Value, Ty::Int));
        let p = Kind::Andrew.param("no_compile").unwrap();
        assert_eq!((p.1, p.2, p.3), ("--no-compile", Arg::Switch, Ty::Bool));
        let p = Kind::Postmark.param("buffering").unwrap();
        assert_eq!((p.2, p.3), (Arg::Value, Ty::Bool));
        assert_eq!(Kind::Postmark.param("config").unwrap().2, Arg::Positional);
        assert_eq!(Kind::Replay.param("speed").unwrap().3, Ty::Float);
        assert_eq!(Kind::Replay.param("over").unwrap().2, Arg::Runner);
        assert_eq!(Kind::Find.param("path").unwrap().2, Arg::Runner);
    }

    #[test]
    fn runner_flags_are_not_plan_parameters() {
        for (_, k) in Kind::ALL {
            for f in ["dir", "json", "keep", "cold", "repeat", "location", "csv"] {
                assert!(k.param(f).is_none(), "{} takes {f}", k.name());
            }
        }
    }

    #[test]
    fn enumerated_flags_give_their_choices() {
        let c = Kind::Replay.choices("mode").unwrap();
        assert_eq!(c, ["timed", "afap", "deps"]);
        assert!(Kind::Build.choices("jobs").is_none());
    }
}
