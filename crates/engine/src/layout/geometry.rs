//! The allocation groups of a file system, read from its superblock: ext4's block groups,
//! xfs's allocation groups. A *split file* (Smith & Seltzer) has data in another group than
//! its directory's inode, which costs a seek from directory to file; telling one needs the
//! real geometry, so it is read from the device the file system is mounted from (root
//! only), never guessed from sizes.
//!
//! ext4 (`struct ext4_super_block`, little-endian, 1024 bytes into the device): block `b`
//! is in group `(b - s_first_data_block) / s_blocks_per_group`, inode `i` in group
//! `(i - 1) / s_inodes_per_group`. xfs (`struct xfs_dsb`, big-endian, at offset 0): FIEMAP
//! reports a block as `agno * sb_agblocks + agbno`, so it is in AG `b / sb_agblocks`; inode
//! `i` is in AG `i >> (sb_agblklog + sb_inopblog)`.

use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A file system's allocation groups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    /// "ext4" (also ext2/ext3) or "xfs".
    pub fs: String,
    /// Where the superblock was read.
    pub device: String,
    pub block_size: u64,
    /// Blocks per group (ext4 `s_blocks_per_group`, xfs `sb_agblocks`).
    pub group_blocks: u64,
    pub groups: u64,
    /// ext4's `s_first_data_block` (0 for xfs).
    pub first_data_block: u64,
    /// ext4's `s_inodes_per_group` (0 for xfs).
    pub inodes_per_group: u64,
    /// xfs: inode number bits below the AG number (`sb_agblklog + sb_inopblog`; 0 for ext4).
    pub inode_ag_shift: u32,
    /// ext4 with flex_bg: block groups per flex group (`1 << s_log_groups_per_flex`); 1
    /// otherwise. ext4 keeps a flex group's inodes in its first block group and starts
    /// regular files' data in the next one, by design.
    #[serde(default = "one")]
    pub groups_per_flex: u64,
}

fn one() -> u64 {
    1
}

impl Geometry {
    /// The group of a block (FIEMAP's physical address ÷ block size).
    pub fn group_of_block(&self, block: u64) -> u64 {
        block.saturating_sub(self.first_data_block) / self.group_blocks.max(1)
    }

    /// The group of an inode.
    pub fn group_of_inode(&self, ino: u64) -> u64 {
        if self.fs == "xfs" {
            ino >> self.inode_ag_shift
        } else {
            ino.saturating_sub(1) / self.inodes_per_group.max(1)
        }
    }
}

fn le32(b: &[u8], at: usize) -> u64 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as u64
}
fn be32(b: &[u8], at: usize) -> u64 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap()) as u64
}
fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

/// The geometry in the first 4 KiB of a device; `None` for another file system.
pub fn parse(head: &[u8], device: &str) -> Option<Geometry> {
    if head.len() < 2048 {
        return None;
    }
    if &head[0..4] == b"XFSB" {
        let agblocks = be32(head, 84);
        return Some(Geometry {
            fs: "xfs".into(),
            device: device.into(),
            block_size: be32(head, 4),
            group_blocks: agblocks,
            groups: be32(head, 88),
            first_data_block: 0,
            inodes_per_group: 0,
            inode_ag_shift: head[124] as u32 + head[123] as u32,
            groups_per_flex: 1,
        })
        .filter(|g| g.group_blocks > 0 && g.block_size >= 512 && be64(head, 8) > 0);
    }
    let sb = &head[1024..2048];
    if u16::from_le_bytes([sb[56], sb[57]]) != 0xEF53 {
        return None;
    }
    let block_size = 1024u64 << le32(sb, 24).min(16);
    let per_group = le32(sb, 32);
    // s_blocks_count_hi counts only with the 64bit feature (INCOMPAT_64BIT).
    let hi = if le32(sb, 0x60) & 0x80 != 0 {
        le32(sb, 0x150)
    } else {
        0
    };
    let blocks = le32(sb, 4) | (hi << 32);
    let first = le32(sb, 20);
    let g = Geometry {
        fs: "ext4".into(),
        device: device.into(),
        block_size,
        group_blocks: per_group,
        groups: blocks.saturating_sub(first).div_ceil(per_group.max(1)),
        first_data_block: first,
        inodes_per_group: le32(sb, 40),
        inode_ag_shift: 0,
        // INCOMPAT_FLEX_BG, and s_log_groups_per_flex.
        groups_per_flex: if le32(sb, 0x60) & 0x200 != 0 {
            1 << sb[0x174].min(31)
        } else {
            1
        },
    };
    (g.group_blocks > 0 && g.inodes_per_group > 0).then_some(g)
}

/// The device a file system (`dev` = `st_dev` of a file on it) is mounted from, as
/// `/proc/self/mountinfo` names it.
fn device_of(dev: libc::dev_t) -> Option<PathBuf> {
    let want = format!("{}:{}", libc::major(dev), libc::minor(dev));
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (left.split(' ').nth(2)? == want)
            .then(|| right.split(' ').nth(1).map(PathBuf::from))
            .flatten()
    })
}

/// The geometry of the file system holding a file with `st_dev` = `dev`; `Err(why not)`
/// where it cannot be read (another file system, no device, not root).
pub fn of_dev(dev: libc::dev_t) -> Result<Geometry, String> {
    let node = format!("/dev/block/{}:{}", libc::major(dev), libc::minor(dev));
    let candidates: Vec<PathBuf> = device_of(dev)
        .into_iter()
        .chain([PathBuf::from(node)])
        .collect();
    let mut tried: Vec<String> = Vec::new();
    for dev_path in candidates {
        match read_head(&dev_path) {
            Ok(head) => {
                let name = dev_path.display().to_string();
                return parse(&head, &name).ok_or_else(|| {
                    format!("{name} holds no ext4 or xfs superblock: split files are counted on ext4 and xfs")
                });
            }
            Err(e) => tried.push(format!("{}: {e}", dev_path.display())),
        }
    }
    let mut why = format!("cannot read the superblock ({})", tried.join("; "));
    if why.contains("ermission denied") {
        why += "; split files need the superblock: run as root";
    }
    Err(why)
}

fn read_head(p: &Path) -> io::Result<Vec<u8>> {
    let f = std::fs::File::open(p)?;
    let mut buf = vec![0u8; 4096];
    let n = f.read_at(&mut buf, 0)?;
    buf.truncate(n);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext4_superblock() {
        let mut h = vec![0u8; 4096];
        let sb = 1024;
        h[sb + 4..sb + 8].copy_from_slice(&262144u32.to_le_bytes()); // blocks
        h[sb + 20..sb + 24].copy_from_slice(&0u32.to_le_bytes()); // first data block
        h[sb + 24..sb + 28].copy_from_slice(&2u32.to_le_bytes()); // 4 KiB blocks
        h[sb + 32..sb + 36].copy_from_slice(&32768u32.to_le_bytes());
        h[sb + 40..sb + 44].copy_from_slice(&8192u32.to_le_bytes());
        h[sb + 56..sb + 58].copy_from_slice(&0xEF53u16.to_le_bytes());
        let g = parse(&h, "/dev/x").unwrap();
        assert_eq!((g.fs.as_str(), g.block_size, g.groups), ("ext4", 4096, 8));
        assert_eq!(g.group_of_block(32767), 0);
        assert_eq!(g.group_of_block(32768), 1);
        assert_eq!(g.group_of_inode(8192), 0);
        assert_eq!(g.group_of_inode(8193), 1);
        assert_eq!(g.groups_per_flex, 1);
        h[sb + 0x60..sb + 0x64].copy_from_slice(&(0x02u32 | 0x40 | 0x200).to_le_bytes()); // filetype, extents, flex_bg
        h[sb + 0x174] = 4;
        assert_eq!(parse(&h, "/dev/x").unwrap().groups_per_flex, 16);
        h[sb + 56] = 0;
        assert!(parse(&h, "/dev/x").is_none());
    }

    #[test]
    fn xfs_superblock() {
        let mut h = vec![0u8; 4096];
        h[0..4].copy_from_slice(b"XFSB");
        h[4..8].copy_from_slice(&4096u32.to_be_bytes());
        h[8..16].copy_from_slice(&131072u64.to_be_bytes());
        h[84..88].copy_from_slice(&32768u32.to_be_bytes());
        h[88..92].copy_from_slice(&4u32.to_be_bytes());
        h[123] = 4; // 16 inodes per block
        h[124] = 15; // agblklog
        let g = parse(&h, "/dev/y").unwrap();
        assert_eq!((g.fs.as_str(), g.groups, g.inode_ag_shift), ("xfs", 4, 19));
        assert_eq!(g.group_of_block(32768 * 3 + 5), 3);
        assert_eq!(g.group_of_inode((2u64 << 19) | 77), 2);
    }
}
