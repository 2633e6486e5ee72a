//! The engine of fsbench: filesets laid out on disk, workers running flowops and block-I/O
//! streams, the run directory, tree scans, walks and layout scores. It uses the results, model
//! and base crates.

pub mod engine;
pub mod fileset;
pub mod layout;
pub mod scan;
