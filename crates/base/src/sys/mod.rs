//! System-level helpers that depend on nothing else of fsbench.

pub mod blockstat;
pub mod cachedrops;
pub mod cachestat;
pub mod cgroup;
pub mod cpu;
pub mod cpustat;
pub mod damon;
pub mod device;
pub mod fsmagic;
pub mod io;
pub mod iosched;
pub mod mark;
