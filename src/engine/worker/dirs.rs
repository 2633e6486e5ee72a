//! Directory flowops: makedir, removedir, listdir.

use super::*;
use FlowopKind::*;

impl Worker<'_> {
    pub(super) fn op_makedir(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let fsi = f
            .fileset
            .expect("validated: makedir/removedir name a fileset");
        let fs = &self.sh.filesets[fsi];
        let make = f.kind == MakeDir;
        let idx = self.index_scaled(f, fs.leafdirs.len(), true);
        let want = if make { Want::Absent } else { Want::Exists };
        let Some(e) = fs.pick(List::LeafDirs, want, idx) else {
            return Err(Fail::NoResource);
        };
        let path = fs.entry_path(List::LeafDirs, e, &mut self.path);
        let t0 = self.clock.now();
        let r = if make {
            io::mkdir(path)
        } else {
            io::rmdir(path)
        };
        let ns = self.clock.since(t0);
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
                    if make { "mkdir" } else { "rmdir" },
                    self.path_string()
                )))
            }
        }
    }

    pub(super) fn op_listdir(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let fsi = f.fileset.expect("validated: listdir names a fileset");
        let fs = &self.sh.filesets[fsi];
        let Some(d) = fs.pick_dir() else {
            return Err(Fail::NoResource);
        };
        let path = fs.dir_path(d, &mut self.path);
        let t0 = self.clock.now();
        let r = io::list_dir(path, &mut self.dirbuf);
        let ns = self.clock.since(t0);
        match r {
            Ok((_, names)) => {
                self.done(f, ns, names);
                Ok(Flow::Continue)
            }
            Err(err) => Err(Fail::Error(format!(
                "listdir {}: {err}",
                self.path_string()
            ))),
        }
    }
}
