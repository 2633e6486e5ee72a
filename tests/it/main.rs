//! The integration tests: one program, so the crate is linked once, not once per file.
//! Each module drives the real binary on real files in temporary directories; tests that
//! need root, loop devices or dropping caches skip elsewhere with the reason on standard
//! error, and the number skipped is printed when the program ends.
//!
//! Four programs stay apart (tests/memory.rs, memory_fileset.rs, inputs.rs,
//! experiment_validity.rs): they measure a child's peak resident size, an aged layout (which
//! a cache drop by another test moves: tests/memory/aging.rs) or a cold against a warm walk,
//! and the tests of this program running beside them (two at a time) changed what they
//! measured: a run of 20,000 flowops held 244 MiB here against 150 MiB alone, a warm find
//! was slower than a cold one, and the aging memory test was disturbed in every attempt.
//! Cargo runs test programs one after another.
//!
//! This program runs one test more at a time than the machine has cores (unless
//! RUST_TEST_THREADS or `--test-threads` says otherwise): most of its time is spent waiting
//! (simulated disks' service times, timed runs, children), and two at a time on two cores
//! left the cores idle 43% of its 580 s here; three at a time it took 449 s and 443 s.

/// Sets the test harness's default thread count before it reads it: cores + 1.
extern "C" fn one_test_more_than_cores() {
    if std::env::var_os("RUST_TEST_THREADS").is_none() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get()) + 1;
        // Run from .init_array, before main and before any other thread exists.
        std::env::set_var("RUST_TEST_THREADS", n.to_string());
    }
}

#[used]
#[link_section = ".init_array"]
static ONE_TEST_MORE_THAN_CORES: extern "C" fn() = one_test_more_than_cores;

mod age;
mod apps;
mod architecture;
mod background;
mod cache_drops;
mod common;
mod completions;
mod content;
mod content_control;
mod daemon_pids;
mod disk;
mod engine;
mod experiment;
mod experiment_nfs;
mod experiment_targets;
mod fidelity;
mod fio;
mod fio_device;
mod fio_options;
mod fio_output;
mod fio_run_opts;
mod fio_verify;
mod fio_verify_opts;
mod fuzz_lang;
mod hpc;
mod idle;
mod interrupts;
mod json_keys;
mod lang;
mod measure;
mod messages;
#[cfg(feature = "mpi")]
mod mpi;
mod newcomer;
mod nfs_client;
mod nfs_common;
mod nfs_rpcs;
mod nfs_target;
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
