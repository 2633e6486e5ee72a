//! The one table of flowop types, as Filebench's `flowoplib_funcs[]`: a row per type with
//! its name, the IO class it counts under, the attributes it takes, what it must be given,
//! how it uses files, and what it costs in an estimate. The parser, the checks, `explain`,
//! the estimate and the IO summary read a type's facts from its row ([`FlowopKind::def`]);
//! the engine runs each type by an exhaustive `match` over [`FlowopKind`] in one function
//! (`Worker::exec_inner`). Adding a type is a variant, a row here (the table's length is
//! the number of variants, so the compiler asks for it) and an arm there.

use super::Flowop;

/// Every built-in flowop type. The order is the order of [`FLOWOPS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowopKind {
    Read,
    Write,
    AppendFile,
    AppendFileRand,
    ReadWholeFile,
    WriteWholeFile,
    CreateFile,
    OpenFile,
    CloseFile,
    DeleteFile,
    StatFile,
    Fsync,
    FsyncSet,
    MakeDir,
    RemoveDir,
    ListDir,
    AioWrite,
    AioWait,
    Block,
    Wakeup,
    SemBlock,
    SemPost,
    Hog,
    Delay,
    EventLimit,
    IopsLimit,
    OpsLimit,
    BwLimit,
    FinishOnCount,
    FinishOnBytes,
    Print,
    TestRandVar,
    /// fsbench extension: sleep `value` microseconds (a think time; `value` may be a randvar).
    Think,
    /// A user-defined composite flowop (`define flowop`).
    Composite,
    /// A block-I/O stream (a fio job, [`crate::model::stream::Stream`]); not a name the
    /// workload language knows. Keep it last: the table's length counts up to it.
    Stream,
}

/// How a flowop counts in the IO summary (Filebench's FLOW_ATTR_READ / FLOW_ATTR_WRITE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IoClass {
    /// Counted in the summary's ops and in rd.
    Read,
    /// Counted in the summary's ops and in wr.
    Write,
    /// Counted in the summary's ops (open, close, stat, create, delete, dirs).
    Meta,
    /// Not counted (sync, limits, hog, delay, print).
    None,
}

/// How a flowop finds the file or directory it works on; the builder's checks of
/// `filesetname=` and `fd=` follow from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileUse {
    /// No file (synchronisation, pacing, sleeps, prints).
    NoFile,
    /// Creates or opens one of a fileset's files into its slot: needs `filesetname=`.
    Opens,
    /// Works on a fileset as a whole or on its directories: needs `filesetname=`.
    Fileset,
    /// Reads or writes a file: a fileset's (opened into its slot when the slot is empty)
    /// or an open slot's (`fd=`); needs one of them unless it rotates (`opennext`).
    Io,
    /// Deletes or looks up an entry: a fileset's, or an open slot's file (`fd=` 1 to 127).
    Entry,
    /// Works on an open slot (`fd=`, slot 0 when none is given).
    Slot,
}

impl FileUse {
    /// Whether the flowop cannot run without `filesetname=`.
    pub fn needs_fileset(self) -> bool {
        matches!(self, FileUse::Opens | FileUse::Fileset)
    }

    /// Whether it needs `filesetname=` or `fd=` (or `opennext`).
    pub fn needs_file_or_fd(self) -> bool {
        matches!(self, FileUse::Io | FileUse::Entry)
    }

    /// Whether it fills its slot, given whether it names a fileset.
    pub fn opens_slot(self, has_fileset: bool) -> bool {
        self == FileUse::Opens || (self == FileUse::Io && has_fileset)
    }

    /// Whether, naming no fileset, it works on a slot something else opened.
    pub fn uses_slot(self) -> bool {
        matches!(self, FileUse::Io | FileUse::Slot)
    }
}

/// What one operation of a flowop costs in an experiment's time estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    /// Nothing worth estimating (synchronisation, pacing, hogs, prints).
    Free,
    /// A metadata update the file system must make durable (create, delete, mkdir, rmdir).
    MetaUpdate,
    /// A lookup the page cache usually answers (open, close, stat, listdir).
    MetaLookup,
    /// Reading its bytes: from the cache, or from the device when the run starts cold.
    ReadBytes,
    /// Writing its bytes: to the cache (flushed by a later fsync), or through to the device
    /// with `dsync` or `directio`.
    WriteBytes,
    /// Flushing what was written since the last flush.
    Flush,
    /// Sleeping `value` microseconds.
    SleepMicros,
    /// Sleeping `value` seconds.
    SleepSeconds,
    /// What its children cost (a composite).
    Children,
}

/// One row of [`FLOWOPS`]: everything the model knows of a flowop type.
#[derive(Debug, Clone, Copy)]
pub struct FlowopDef {
    pub kind: FlowopKind,
    pub name: &'static str,
    pub io: IoClass,
    /// The attributes it takes besides [`COMMON_ATTRS`], in groups, in the order error
    /// messages list them ([`FlowopDef::attrs`] reads them in order).
    pub attr_groups: &'static [&'static [&'static str]],
    pub file: FileUse,
    /// Whether it must be given `iosize=` (without it every I/O is of 0 bytes and fails).
    pub needs_iosize: bool,
    /// Whether it must be given `value=`.
    pub needs_value: bool,
    /// The type of flowop its `target=` must name; set, `target=` is required.
    pub wakes: Option<FlowopKind>,
    /// Whether `iosize=0` (or none) means the whole file in one I/O.
    pub whole_file: bool,
    /// Whether it reads or looks up what is on disk before the run (a file's bytes, an
    /// entry, a directory's listing).
    pub reads_before: bool,
    /// Whether it ends its thread's run when a count is reached (`finishoncount`,
    /// `finishonbytes`).
    pub finishes: bool,
    /// Whether it is asynchronous I/O through the kernel (io_uring).
    pub kernel_aio: bool,
    /// Whether the workload language names it (composites and fio streams are made
    /// otherwise).
    pub in_language: bool,
    pub cost: Cost,
    /// A check of its attributes' combination beyond the ones above: the error, if any.
    pub check: Option<fn(&Flowop) -> Option<String>>,
    /// Why the engine cannot run it: `check` and `run` refuse such a flowop rather than
    /// skip it. Every type runs today; the field stays for types to come.
    pub unsupported: Option<&'static str>,
}

/// A row with nothing required, no file, no cost: the table's rows add what they have.
const fn row(
    kind: FlowopKind,
    name: &'static str,
    io: IoClass,
    attr_groups: &'static [&'static [&'static str]],
) -> FlowopDef {
    FlowopDef {
        kind,
        name,
        io,
        attr_groups,
        file: FileUse::NoFile,
        needs_iosize: false,
        needs_value: false,
        wakes: None,
        whole_file: false,
        reads_before: false,
        finishes: false,
        kernel_aio: false,
        in_language: true,
        cost: Cost::Free,
        check: None,
        unsupported: None,
    }
}

/// The setters the table's rows are written with.
impl FlowopDef {
    const fn file(mut self, file: FileUse) -> Self {
        self.file = file;
        self
    }
    const fn cost(mut self, cost: Cost) -> Self {
        self.cost = cost;
        self
    }
    const fn needs_iosize(mut self) -> Self {
        self.needs_iosize = true;
        self
    }
    const fn needs_value(mut self) -> Self {
        self.needs_value = true;
        self
    }
    const fn wakes(mut self, kind: FlowopKind) -> Self {
        self.wakes = Some(kind);
        self
    }
    const fn whole_file(mut self) -> Self {
        self.whole_file = true;
        self
    }
    const fn reads_before(mut self) -> Self {
        self.reads_before = true;
        self
    }
    const fn finishes(mut self) -> Self {
        self.finishes = true;
        self
    }
    const fn kernel_aio(mut self) -> Self {
        self.kernel_aio = true;
        self
    }
    const fn internal(mut self) -> Self {
        self.in_language = false;
        self
    }
    const fn check(mut self, check: fn(&Flowop) -> Option<String>) -> Self {
        self.check = Some(check);
        self
    }
}

impl FlowopDef {
    /// The attributes it takes besides [`COMMON_ATTRS`], in order.
    pub fn attrs(&self) -> impl Iterator<Item = &'static str> {
        self.attr_groups.iter().flat_map(|g| g.iter().copied())
    }

    /// Every built-in type the workload language names, in the table's order.
    pub fn named() -> impl Iterator<Item = &'static FlowopDef> {
        FLOWOPS.iter().filter(|d| d.in_language)
    }
}

/// Attributes every flowop accepts.
pub const COMMON_ATTRS: &[&str] = &["name", "iters"];

// Attribute groups, in the order the rows list them.
const NAMES: &[&str] = &["filesetname", "filename", "fd"];
const OPENS: &[&str] = &["opennext", "indexed", "dsync", "directio", "noreadahead"];
const CONTENT: &[&str] = &["compress", "dedupe", "content"];
const SLOT: &[&str] = &["fd", "filesetname", "filename"];
const ENTRY: &[&str] = &["filesetname", "filename", "fd", "indexed"];
const DIR: &[&str] = &["filesetname", "filename", "indexed"];
const VALUE: &[&str] = &["value"];
const TARGET: &[&str] = &["target"];

/// `appendfilerand` writes random sizes at the end of the file, which O_DIRECT refuses.
fn no_directio(f: &Flowop) -> Option<String> {
    f.directio.then(|| format!("flowop `{}`: appendfilerand writes random sizes at the file's end, which O_DIRECT refuses; drop `directio`", f.name))
}

use Cost::*;
use FileUse::*;
use FlowopKind::*;

/// How many types there are: the table must have a row for each.
const COUNT: usize = Stream as usize + 1;

#[rustfmt::skip]
const ROWS: [FlowopDef; COUNT] = [
    // The IO classes follow Filebench's stats.c: the IO summary sums FLOW_TYPE_IO and
    // FLOW_TYPE_AIO flowops; rd/wr count those carrying FLOW_ATTR_READ / FLOW_ATTR_WRITE
    // (listdir carries neither).
    row(Read, "read", IoClass::Read,
        &[NAMES, OPENS, &["iosize", "workingset", "random", "mmap", "stride", "sameoffset", "verify"]])
        .file(Io).needs_iosize().reads_before().cost(ReadBytes),
    row(Write, "write", IoClass::Write,
        &[NAMES, OPENS, &["iosize", "workingset", "random", "stride", "sameoffset"], CONTENT])
        .file(Io).needs_iosize().cost(WriteBytes),
    row(AppendFile, "appendfile", IoClass::Write, &[NAMES, OPENS, &["iosize"], CONTENT])
        .file(Io).cost(WriteBytes),
    row(AppendFileRand, "appendfilerand", IoClass::Write, &[NAMES, OPENS, &["iosize"], CONTENT])
        .file(Io).needs_iosize().cost(WriteBytes).check(no_directio),
    row(ReadWholeFile, "readwholefile", IoClass::Read, &[NAMES, OPENS, &["iosize", "mmap", "verify"]])
        .file(Io).whole_file().reads_before().cost(ReadBytes),
    row(WriteWholeFile, "writewholefile", IoClass::Write, &[NAMES, &["srcfd"], OPENS, &["iosize"], CONTENT])
        .file(Io).whole_file().cost(WriteBytes),
    row(CreateFile, "createfile", IoClass::Meta, &[NAMES, OPENS]).file(Opens).cost(MetaUpdate),
    row(OpenFile, "openfile", IoClass::Meta, &[NAMES, OPENS]).file(Opens).reads_before().cost(MetaLookup),
    row(CloseFile, "closefile", IoClass::Meta, &[SLOT]).file(Slot).cost(MetaLookup),
    row(DeleteFile, "deletefile", IoClass::Meta, &[ENTRY]).file(Entry).reads_before().cost(MetaUpdate),
    row(StatFile, "statfile", IoClass::Meta, &[ENTRY]).file(Entry).reads_before().cost(MetaLookup),
    row(Fsync, "fsync", IoClass::Meta, &[SLOT]).file(Slot).cost(Flush),
    row(FsyncSet, "fsyncset", IoClass::Meta, &[&["filesetname", "filename"]]).file(Fileset).cost(Flush),
    row(MakeDir, "makedir", IoClass::Meta, &[DIR]).file(Fileset).cost(MetaUpdate),
    row(RemoveDir, "removedir", IoClass::Meta, &[DIR]).file(Fileset).reads_before().cost(MetaUpdate),
    row(ListDir, "listdir", IoClass::Meta, &[DIR]).file(Fileset).reads_before().cost(MetaLookup),
    row(AioWrite, "aiowrite", IoClass::Write,
        &[NAMES, OPENS, &["iosize", "workingset", "random"], CONTENT])
        .file(Io).needs_iosize().kernel_aio().cost(WriteBytes),
    row(AioWait, "aiowait", IoClass::Meta, &[]).kernel_aio(),
    row(Block, "block", IoClass::None, &[]),
    row(Wakeup, "wakeup", IoClass::None, &[TARGET]).wakes(Block),
    row(SemBlock, "semblock", IoClass::None, &[&["value", "highwater", "blocking"]]),
    row(SemPost, "sempost", IoClass::None, &[&["value", "target", "blocking"]]).wakes(SemBlock),
    row(Hog, "hog", IoClass::None, &[VALUE]).needs_value(),
    row(Delay, "delay", IoClass::None, &[VALUE]).needs_value().cost(SleepSeconds),
    row(EventLimit, "eventlimit", IoClass::None, &[]),
    row(IopsLimit, "iopslimit", IoClass::None, &[TARGET]),
    row(OpsLimit, "opslimit", IoClass::None, &[TARGET]),
    row(BwLimit, "bwlimit", IoClass::None, &[TARGET]),
    row(FinishOnCount, "finishoncount", IoClass::None, &[VALUE, TARGET]).needs_value().finishes(),
    row(FinishOnBytes, "finishonbytes", IoClass::None, &[VALUE, TARGET]).needs_value().finishes(),
    row(Print, "print", IoClass::None, &[VALUE]),
    row(TestRandVar, "testrandvar", IoClass::None, &[VALUE]),
    row(Think, "think", IoClass::None, &[VALUE]).needs_value().cost(SleepMicros),
    row(Composite, "composite", IoClass::None, &[]).internal().cost(Children),
    row(Stream, "stream", IoClass::None, &[]).internal(),
];

// Row `i` is the row of the type whose discriminant is `i`: [`FlowopKind::def`] indexes by it.
const _: () = {
    let mut i = 0;
    while i < COUNT {
        assert!(
            ROWS[i].kind as usize == i,
            "FLOWOPS out of the order of FlowopKind"
        );
        i += 1;
    }
};

/// Every flowop type, in the order of [`FlowopKind`].
pub static FLOWOPS: [FlowopDef; COUNT] = ROWS;

impl FlowopKind {
    /// This type's row of [`FLOWOPS`].
    #[inline]
    pub fn def(self) -> &'static FlowopDef {
        &FLOWOPS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// The built-in type the workload language calls `name`.
    pub fn from_name(name: &str) -> Option<FlowopKind> {
        FlowopDef::named().find(|d| d.name == name).map(|d| d.kind)
    }

    #[inline]
    pub fn io_class(self) -> IoClass {
        self.def().io
    }
}

/// Every attribute name any flowop accepts (for "unknown attribute" messages).
pub fn all_flowop_attrs() -> Vec<&'static str> {
    let mut v: Vec<&str> = COMMON_ATTRS.to_vec();
    for a in FlowopDef::named().flat_map(FlowopDef::attrs) {
        if !v.contains(&a) {
            v.push(a);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in FlowopDef::named() {
            assert_eq!(FlowopKind::from_name(d.name), Some(d.kind));
        }
        assert_eq!(FlowopDef::named().count(), COUNT - 2);
        assert_eq!(FlowopKind::from_name("composite"), None);
        assert_eq!(FlowopKind::from_name("stream"), None);
        assert_eq!(FlowopKind::from_name("reed"), None);
    }

    /// The facts the builder's checks derive from a row agree with its attributes: a type
    /// that needs something takes the attribute that gives it.
    #[test]
    fn what_a_row_requires_it_accepts() {
        for d in &FLOWOPS {
            let takes = |a: &str| d.attrs().any(|x| x == a);
            let file = d.file.needs_fileset() || d.file.needs_file_or_fd();
            assert!(!file || takes("filesetname"), "{}", d.name);
            assert!(!d.file.uses_slot() || takes("fd"), "{}", d.name);
            assert!(!d.needs_iosize || takes("iosize"), "{}", d.name);
            assert!(!d.needs_value || takes("value"), "{}", d.name);
            assert!(d.wakes.is_none() || takes("target"), "{}", d.name);
            assert!(!d.whole_file || takes("iosize"), "{}", d.name);
            let mut seen: Vec<&str> = COMMON_ATTRS.to_vec();
            for a in d.attrs() {
                assert!(!seen.contains(&a), "{} lists `{a}` twice", d.name);
                seen.push(a);
            }
        }
    }
}
