//! The integration tests: one program, so the crate is linked once, not once per file.
//! Each module drives the real binary on real files in temporary directories; tests that
//! need root, loop devices or dropping caches skip elsewhere with the reason on standard
//! error, and the number skipped is printed when the program ends.

mod age;
mod apps;
mod architecture;
mod background;
mod cache_drops;
mod common;
mod completions;
mod content;
mod content_control;
mod disk;
mod engine;
mod experiment;
mod experiment_targets;
mod experiment_validity;
mod fidelity;
mod fio;
mod fio_device;
mod fio_options;
mod fio_output;
mod fio_verify;
mod fuzz_lang;
mod hpc;
mod idle;
mod inputs;
mod interrupts;
mod json_keys;
mod lang;
mod measure;
mod memory;
mod memory_fileset;
mod messages;
#[cfg(feature = "mpi")]
mod mpi;
mod newcomer;
mod pacing;
mod prune;
mod published;
mod remote;
mod report_html;
mod results;
mod robust;
mod safety;
mod scan_layout;
mod scan_per_user;
mod stdout;
mod teardown_trust;
mod trace;
mod trace_safety;
mod verify;
