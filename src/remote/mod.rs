//! Simulated remote file systems: a server tree behind a modelled network.
//!
//! ```text
//!  applications ── MNT (FUSE) ──▶ fsbench remote serve (this module)
//!                                   │ client model: attribute cache (3 s),
//!                                   │ whole-file cache or 64 KiB chunk cache,
//!                                   │ lookaside trees indexed by content hash
//!                                   │ network model: RTT per request, one
//!                                   │ FIFO link of fixed bandwidth
//!                                   ▼
//!                              server tree DIR (lstat, pread, pwrite...)
//! ```
//!
//! Every request that would cross the network is answered when the modelled
//! network would have delivered its reply, so programs on MNT see the timing of
//! a remote file system (AFS-like whole-file, or NFS-like block transfers).
//! See docs/remote.md.
//!
//! * [`model`] — the network model (link, presets, parsing), unit-tested.
//! * [`server`] — the FUSE server (protocol in [`crate::fuse`]) and its caches.
//! * [`state`] — the state directory: configuration, pid, statistics.
//! * [`cli`] — `fsbench remote create|list|stats|remove`.

pub mod cli;
pub mod model;
pub mod server;
pub mod state;

/// What simulated remotes add to every measurement: dropping caches empties their client
/// caches too.
struct RemoteHooks;

impl crate::engine::hooks::Hooks for RemoteHooks {
    fn drop_caches(&self) -> Result<(), String> {
        cli::drop_all_client_caches()
            .map(|_| ())
            .map_err(|e| format!("{e:#}"))
    }
}

/// Register the simulated remotes' hooks with the engine (once, at start-up).
pub fn register_hooks() {
    crate::engine::hooks::register(&RemoteHooks);
}
