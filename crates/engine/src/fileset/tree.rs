//! The shape of a fileset's directory tree, built as Filebench builds it: a mean depth of
//! ln(entries + leafdirs) / ln(dirwidth); for each directory a depth threshold and a width
//! drawn from gamma distributions with shape `dirgamma` (deterministic when 0); a directory at
//! or past its threshold is a leaf and holds `width` entries, otherwise it gets `width`
//! subdirectories. The fileset's root only ever holds directories, so entries sit at least one
//! level down.
//!
//! Entries are stored compactly: a directory is its parent index and a name number, a file its
//! directory index and name number. Names are eight-digit numbers, unique within a fileset, so
//! leaf directories and files never collide (they do in Filebench when a fileset has both).

use super::Entry;
use fsbench_model::dist::{gamma_with_mean, Rng};

/// Safety bound on depth, far beyond anything the mean-depth formula produces.
const MAX_DEPTH: u32 = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dir {
    /// Index of the parent in [`Tree::dirs`]; the root is its own parent.
    pub parent: u32,
    pub depth: u32,
    pub name: u32,
}

#[derive(Debug, Default)]
pub struct Tree {
    /// `dirs[0]` is the fileset's root directory.
    pub dirs: Vec<Dir>,
    /// Files and leaf directories as the run keeps them: planned here, sized and moved into
    /// the run without a copy.
    pub files: Vec<Entry>,
    pub leafdirs: Vec<Entry>,
}

/// Parameters of a tree.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub entries: u64,
    pub leafdirs: u64,
    pub dirwidth: u64,
    /// Gamma shape for depth and width (fileset.c `fileset_populate_subdir` draws both
    /// with `dirgamma`); 0 means every directory gets exactly the mean depth and exactly
    /// `dirwidth` entries.
    pub dirgamma: f64,
}

impl Shape {
    /// Mean depth as Filebench computes it.
    pub fn mean_depth(&self) -> f64 {
        let n = (self.entries + self.leafdirs).max(1) as f64;
        let w = (self.dirwidth.max(2)) as f64;
        (n.ln() / w.ln()).max(1.0)
    }
}

struct Builder<'a> {
    tree: Tree,
    shape: Shape,
    mean_depth: f64,
    next_name: u32,
    rng: &'a mut Rng,
}

#[derive(Clone, Copy, PartialEq)]
enum What {
    Files,
    LeafDirs,
}

impl Builder<'_> {
    fn name(&mut self) -> u32 {
        self.next_name += 1;
        self.next_name
    }

    fn sample(&mut self, shape: f64, mean: f64) -> f64 {
        if shape <= 0.0 {
            mean
        } else {
            gamma_with_mean(self.rng, shape, mean)
        }
    }

    fn remaining(&self, what: What) -> u64 {
        match what {
            What::Files => self.shape.entries - self.tree.files.len() as u64,
            What::LeafDirs => self.shape.leafdirs - self.tree.leafdirs.len() as u64,
        }
    }

    fn mkdir(&mut self, parent: u32, depth: u32) -> u32 {
        let name = self.name();
        self.tree.dirs.push(Dir {
            parent,
            depth,
            name,
        });
        (self.tree.dirs.len() - 1) as u32
    }

    fn populate(&mut self, dir: u32, depth: u32, what: What) {
        // As Filebench: the depth threshold is truncated to a whole number of at least one,
        // counted with the fileset root at depth one; the width is rounded up.
        let threshold = (self.sample(self.shape.dirgamma, self.mean_depth) as u32).max(1);
        let width = self
            .sample(self.shape.dirgamma, self.shape.dirwidth as f64)
            .ceil()
            .max(1.0) as u64;
        if depth + 1 >= threshold || depth >= MAX_DEPTH {
            let n = width.min(self.remaining(what));
            for _ in 0..n {
                let name = self.name();
                let leaf = Entry::new(dir, name);
                match what {
                    What::Files => self.tree.files.push(leaf),
                    What::LeafDirs => self.tree.leafdirs.push(leaf),
                }
            }
        } else {
            for _ in 0..width {
                if self.remaining(what) == 0 {
                    break;
                }
                let child = self.mkdir(dir, depth + 1);
                self.populate(child, depth + 1, what);
            }
        }
    }
}

impl Tree {
    /// Build a tree for `shape` with the given generator.
    pub fn build(shape: Shape, rng: &mut Rng) -> Tree {
        // Exactly as many entries as planned: no growth that holds twice the list at once.
        let mut tree = Tree::default();
        tree.files
            .reserve_exact(usize::try_from(shape.entries).unwrap_or(usize::MAX));
        tree.leafdirs
            .reserve_exact(usize::try_from(shape.leafdirs).unwrap_or(usize::MAX));
        let mut b = Builder {
            tree,
            shape,
            mean_depth: shape.mean_depth(),
            next_name: 0,
            rng,
        };
        b.tree.dirs.push(Dir {
            parent: 0,
            depth: 0,
            name: 0,
        });
        for what in [What::Files, What::LeafDirs] {
            // Ctrl-C stops planning too; the caller sees the flag and gives up the run.
            while b.remaining(what) > 0 && !fsbench_base::cancel::interrupted() {
                let child = b.mkdir(0, 1);
                b.populate(child, 1, what);
            }
        }
        b.tree
    }

    /// Relative path of every directory (the root is "").
    pub fn dir_paths(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::with_capacity(self.dirs.len());
        for (i, d) in self.dirs.iter().enumerate() {
            if i == 0 {
                out.push(String::new());
            } else {
                let parent = &out[d.parent as usize];
                let p = if parent.is_empty() {
                    format!("{:08}", d.name)
                } else {
                    format!("{parent}/{:08}", d.name)
                };
                out.push(p);
            }
        }
        out
    }

    /// Directories that hold at least one file or leaf directory.
    #[cfg(test)]
    pub fn leaf_parents(&self) -> Vec<u32> {
        let mut holds = vec![false; self.dirs.len()];
        for l in self.files.iter().chain(&self.leafdirs) {
            holds[l.dir as usize] = true;
        }
        (0..self.dirs.len() as u32)
            .filter(|d| holds[*d as usize])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_model::dist::rng;

    fn stats(t: &Tree) -> (f64, f64) {
        let depth: f64 = t
            .files
            .iter()
            .map(|f| t.dirs[f.dir as usize].depth as f64)
            .sum::<f64>()
            / t.files.len() as f64;
        let parents = t.leaf_parents();
        (depth, t.files.len() as f64 / parents.len() as f64)
    }

    #[test]
    fn counts_and_reproducibility() {
        let shape = Shape {
            entries: 10_000,
            leafdirs: 0,
            dirwidth: 20,
            dirgamma: 1.5,
        };
        let a = Tree::build(shape, &mut rng(7, 0));
        let b = Tree::build(shape, &mut rng(7, 0));
        let c = Tree::build(shape, &mut rng(8, 0));
        assert_eq!(a.files.len(), 10_000);
        assert_eq!(a.files, b.files);
        assert_ne!(a.files, c.files);
        // Files are never in the root.
        assert!(a.files.iter().all(|f| f.dir != 0));
        // Mean depth ln(10000)/ln(20) = 3.07 as Filebench counts (root = 1): files two to
        // four levels below the root on average; files per leaf directory near 20.
        let (depth, width) = stats(&a);
        // Deep subtrees hold exponentially many files, so the mean sits well above the
        // threshold's mean; Filebench's trees have the same skew.
        assert!((1.5..8.0).contains(&depth), "mean depth {depth}");
        assert!((12.0..30.0).contains(&width), "mean width {width}");
    }

    #[test]
    fn deterministic_without_gamma() {
        let shape = Shape {
            entries: 1000,
            leafdirs: 0,
            dirwidth: 10,
            dirgamma: 0.0,
        };
        let t = Tree::build(shape, &mut rng(1, 0));
        // Mean depth ln(1000)/ln(10) is 2.9999... in floating point, truncated to 2 with the
        // root counted as depth one: the root gets directories of exactly 10 files each until
        // all 1000 are placed (as Filebench builds it).
        assert!(t.files.iter().all(|f| t.dirs[f.dir as usize].depth == 1));
        assert_eq!(t.leaf_parents().len(), 100);
        assert_eq!(t.dirs.len(), 1 + 100);
        let t = Tree::build(
            Shape {
                entries: 1000,
                leafdirs: 0,
                dirwidth: 8,
                dirgamma: 0.0,
            },
            &mut rng(1, 0),
        );
        // ln(1000)/ln(8) = 3.32 -> 3: files two levels below the root, 8 per directory.
        assert!(t.files.iter().all(|f| t.dirs[f.dir as usize].depth == 2));
        assert_eq!(t.leaf_parents().len(), 125);
    }

    #[test]
    fn leafdirs_beside_entries_have_distinct_names() {
        let shape = Shape {
            entries: 300,
            leafdirs: 200,
            dirwidth: 8,
            dirgamma: 1.5,
        };
        let t = Tree::build(shape, &mut rng(3, 0));
        assert_eq!(t.files.len(), 300);
        assert_eq!(t.leafdirs.len(), 200);
        let mut names: Vec<u32> = t
            .files
            .iter()
            .chain(&t.leafdirs)
            .map(|l| l.name)
            .chain(t.dirs.iter().skip(1).map(|d| d.name))
            .collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
        let paths = t.dir_paths();
        assert_eq!(paths[0], "");
        assert!(paths[1].len() == 8);
    }
}
