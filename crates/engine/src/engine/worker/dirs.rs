//! Directory flowops: makedir, removedir, listdir.

use super::remote::EntryOp;
use super::{Fail, Flow, Worker};
use crate::fileset::{List, Want};
use fsbench_model::model::{Flowop, FlowopKind};
use FlowopKind::*;

impl Worker<'_> {
    pub(super) fn op_makedir(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let fsi = f
            .fileset
            .expect("validated: makedir/removedir name a fileset");
        let fs = &self.sh.filesets[fsi];
        let make = f.kind == MakeDir;
        let start = self.start_scaled(f, fs.leafdirs.len(), true);
        let want = if make { Want::Absent } else { Want::Exists };
        let e = fs.pick(List::LeafDirs, want, start)?;
        let op = if make {
            EntryOp::MakeDir
        } else {
            EntryOp::RemoveDir
        };
        let (r, ns) = self.entry_call(fsi, List::LeafDirs, e, op);
        match r {
            Ok(()) => {
                fs.release(List::LeafDirs, e, make);
                self.done(f, ns, 0);
                Ok(Flow::Continue)
            }
            Err(err) => {
                fs.release(List::LeafDirs, e, !make);
                Err(Fail::Error(format!(
                    "{} {}: {err}",
                    op.name(),
                    fs.entry_pathbuf(List::LeafDirs, e).display()
                )))
            }
        }
    }

    pub(super) fn op_listdir(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let fsi = f.fileset.expect("validated: listdir names a fileset");
        let fs = &self.sh.filesets[fsi];
        // Busy while listed, as Filebench's listdir holds its pick until the listing ends.
        let d = fs.pick_dir()?;
        let (r, ns) = self.list_dir(fsi, d);
        fs.release_dir(d);
        match r {
            Ok((entries, names)) => {
                // As Filebench's listdir: strlen(d_name) + sizeof(struct dirent) - 1 per
                // entry read ("." and ".." included).
                let per = std::mem::size_of::<libc::dirent>() as u64 - 1;
                self.done(f, ns, names + entries * per);
                Ok(Flow::Continue)
            }
            Err(err) => Err(Fail::Error(format!(
                "listdir {}: {err}",
                fs.dir_pathbuf(d).display()
            ))),
        }
    }
}
