//! The bottom layer of fsbench: system calls std does not wrap, owned trees (what fsbench made
//! and may remove), walking beneath a directory descriptor, units, interruption and exit status,
//! console output, the export writers, FUSE's structures, libnfs's binding, and named daemons'
//! state and processes. It uses no other fsbench crate.

pub mod beneath;
pub mod cancel;
pub mod cluster;
pub mod console;
pub mod created;
pub mod daemon;
pub mod exit;
pub mod export;
pub mod fuse;
pub mod input;
pub mod libnfs;
pub mod limits;
pub mod owned;
pub mod remount;
pub mod sys;
#[cfg(test)]
mod testsrc;
pub mod units;
pub mod walk;
