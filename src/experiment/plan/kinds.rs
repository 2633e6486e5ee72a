//! What a measurement kind is and the parameters each takes, with the command-line flag
//! each parameter becomes.

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

impl Kind {
    pub const ALL: [(&'static str, Kind); 9] = [
        ("workload", Kind::Workload),
        ("postmark", Kind::Postmark),
        ("andrew", Kind::Andrew),
        ("find", Kind::Find),
        ("build", Kind::Build),
        ("layout", Kind::Layout),
        ("scan", Kind::Scan),
        ("replay", Kind::Replay),
        ("read", Kind::Read),
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

    /// The parameters this kind accepts, [`MEMORY`] among them. A workload also takes its
    /// own variables (checked against the workload itself).
    pub fn params(self) -> &'static [Param] {
        self.own_params()
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
        matches!(self, Kind::Workload | Kind::Read | Kind::Replay)
    }

    /// Whether a kind walks a tree the runner can make (`tree_files`).
    pub fn makes_tree(self) -> bool {
        matches!(self, Kind::Find | Kind::Read)
    }

    fn own_params(self) -> &'static [Param] {
        use Arg::*;
        use Ty::*;
        match self {
            Kind::Workload => &[
                ("workload", "", Positional, Str),
                ("duration", "--duration", Value, Float),
                ("warmup", "--warmup", Value, Float),
                ("seed", "--seed", Value, Int),
                MEMORY,
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
                MEMORY,
            ],
            Kind::Andrew => &[
                ("copies", "--copies", Value, Int),
                ("clients", "--clients", Value, Int),
                ("no_compile", "--no-compile", Switch, Bool),
                ("cc", "--cc", Value, Str),
                ("seed", "--seed", Value, Int),
                MEMORY,
            ],
            Kind::Find => &[
                ("path", "", Runner, Str),
                ("threads", "--threads", Value, Int),
                ("tree_files", "", Runner, Int),
                ("tree_dirs", "", Runner, Int),
                ("tree_file_size", "", Runner, Str),
                MEMORY,
            ],
            Kind::Read => &[
                ("path", "", Runner, Str),
                ("jobs", "--jobs", Value, Int),
                ("order", "--order", Value, Str),
                ("block", "--block", Value, Int),
                ("seed", "--seed", Value, Int),
                ("tree_files", "", Runner, Int),
                ("tree_dirs", "", Runner, Int),
                ("tree_file_size", "", Runner, Str),
                MEMORY,
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
                MEMORY,
            ],
            Kind::Layout => &[
                ("path", "", Runner, Str),
                ("sync", "--sync", Switch, Bool),
                MEMORY,
            ],
            Kind::Replay => &[
                ("trace", "", Positional, Str),
                ("mode", "--mode", Value, Str),
                ("speed", "--speed", Value, Float),
                ("threads", "--threads", Value, Str),
                ("over", "", Runner, Str),
                MEMORY,
            ],
            Kind::Scan => &[
                ("path", "", Runner, Str),
                ("threads", "--threads", Value, Int),
                MEMORY,
            ],
        }
    }

    pub fn param(self, name: &str) -> Option<&'static Param> {
        self.params().iter().find(|p| p.0 == name)
    }
}
