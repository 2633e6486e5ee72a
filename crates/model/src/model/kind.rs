//! The one table of flowop types: name, what kind of I/O it is, which attributes it takes and
//! whether the engine runs it. The parser looks a type up here; the engine `match`es on
//! [`FlowopKind`]; the IO summary asks [`FlowopKind::io_class`].

/// Every built-in flowop type.
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
    /// workload language knows.
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

use FlowopKind::*;

/// Attributes every flowop accepts.
pub const COMMON_ATTRS: &[&str] = &["name", "iters"];

const FILE_OPEN_ATTRS: &[&str] = &[
    "filesetname",
    "filename",
    "fd",
    "opennext",
    "indexed",
    "dsync",
    "directio",
    "noreadahead",
];

impl FlowopKind {
    pub const ALL: &'static [FlowopKind] = &[
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
        Think,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Read => "read",
            Write => "write",
            AppendFile => "appendfile",
            AppendFileRand => "appendfilerand",
            ReadWholeFile => "readwholefile",
            WriteWholeFile => "writewholefile",
            CreateFile => "createfile",
            OpenFile => "openfile",
            CloseFile => "closefile",
            DeleteFile => "deletefile",
            StatFile => "statfile",
            Fsync => "fsync",
            FsyncSet => "fsyncset",
            MakeDir => "makedir",
            RemoveDir => "removedir",
            ListDir => "listdir",
            AioWrite => "aiowrite",
            AioWait => "aiowait",
            Block => "block",
            Wakeup => "wakeup",
            SemBlock => "semblock",
            SemPost => "sempost",
            Hog => "hog",
            Delay => "delay",
            EventLimit => "eventlimit",
            IopsLimit => "iopslimit",
            OpsLimit => "opslimit",
            BwLimit => "bwlimit",
            FinishOnCount => "finishoncount",
            FinishOnBytes => "finishonbytes",
            Print => "print",
            TestRandVar => "testrandvar",
            Think => "think",
            Composite => "composite",
            Stream => "stream",
        }
    }

    pub fn from_name(name: &str) -> Option<FlowopKind> {
        FlowopKind::ALL.iter().copied().find(|k| k.name() == name)
    }

    pub fn io_class(self) -> IoClass {
        match self {
            // As Filebench's stats.c: the IO summary sums FLOW_TYPE_IO and FLOW_TYPE_AIO
            // flowops; rd/wr count those carrying FLOW_ATTR_READ / FLOW_ATTR_WRITE
            // (listdir carries neither).
            Read | ReadWholeFile => IoClass::Read,
            Write | AppendFile | AppendFileRand | WriteWholeFile | AioWrite => IoClass::Write,
            CreateFile | OpenFile | CloseFile | DeleteFile | StatFile | MakeDir | RemoveDir
            | ListDir | Fsync | FsyncSet | AioWait => IoClass::Meta,
            _ => IoClass::None,
        }
    }

    /// Attributes this flowop takes besides [`COMMON_ATTRS`].
    pub fn attrs(self) -> &'static [&'static str] {
        match self {
            Read => &[
                "filesetname",
                "filename",
                "fd",
                "opennext",
                "indexed",
                "dsync",
                "directio",
                "noreadahead",
                "iosize",
                "workingset",
                "random",
                "mmap",
                "stride",
                "sameoffset",
                "verify",
            ],
            Write => &[
                "filesetname",
                "filename",
                "fd",
                "opennext",
                "indexed",
                "dsync",
                "directio",
                "noreadahead",
                "iosize",
                "workingset",
                "random",
                "stride",
                "sameoffset",
                "compress",
                "dedupe",
                "content",
            ],
            AioWrite => &[
                "filesetname",
                "filename",
                "fd",
                "opennext",
                "indexed",
                "dsync",
                "directio",
                "noreadahead",
                "iosize",
                "workingset",
                "random",
                "compress",
                "dedupe",
                "content",
            ],
            AppendFile | AppendFileRand => &[
                "filesetname",
                "filename",
                "fd",
                "opennext",
                "indexed",
                "dsync",
                "directio",
                "noreadahead",
                "iosize",
                "compress",
                "dedupe",
                "content",
            ],
            ReadWholeFile => &[
                "filesetname",
                "filename",
                "fd",
                "opennext",
                "indexed",
                "dsync",
                "directio",
                "noreadahead",
                "iosize",
                "mmap",
                "verify",
            ],
            WriteWholeFile => &[
                "filesetname",
                "filename",
                "fd",
                "srcfd",
                "opennext",
                "indexed",
                "dsync",
                "directio",
                "noreadahead",
                "iosize",
                "compress",
                "dedupe",
                "content",
            ],
            CreateFile | OpenFile => FILE_OPEN_ATTRS,
            CloseFile => &["fd", "filesetname", "filename"],
            DeleteFile | StatFile => &["filesetname", "filename", "fd", "indexed"],
            Fsync => &["fd", "filesetname", "filename"],
            FsyncSet => &["filesetname", "filename"],
            MakeDir | RemoveDir | ListDir => &["filesetname", "filename", "indexed"],
            AioWait => &[],
            Block => &[],
            Wakeup => &["target"],
            SemBlock => &["value", "highwater", "blocking"],
            SemPost => &["value", "target", "blocking"],
            Hog | Delay | Print | TestRandVar | Think => &["value"],
            EventLimit => &[],
            IopsLimit | OpsLimit | BwLimit => &["target"],
            FinishOnCount | FinishOnBytes => &["value", "target"],
            Composite | Stream => &[],
        }
    }

    /// Whether the flowop works on a file or directory of a fileset.
    pub fn uses_fileset(self) -> bool {
        self.attrs().contains(&"filesetname")
    }

    /// Flowops the engine cannot run: `check` and `run` refuse them loudly rather than
    /// skipping them. Every built-in type runs now; the hook stays for future types.
    pub fn unsupported_reason(self) -> Option<&'static str> {
        None
    }
}

/// Every attribute name any flowop accepts (for "unknown attribute" messages).
pub fn all_flowop_attrs() -> Vec<&'static str> {
    let mut v: Vec<&str> = COMMON_ATTRS.to_vec();
    for k in FlowopKind::ALL {
        for a in k.attrs() {
            if !v.contains(a) {
                v.push(a);
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in FlowopKind::ALL {
            assert_eq!(FlowopKind::from_name(k.name()), Some(*k));
        }
        assert_eq!(FlowopKind::from_name("composite"), None);
        assert_eq!(FlowopKind::from_name("reed"), None);
    }
}
