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
//! * [`server`] — the FUSE server (protocol in [`fsbench_base::fuse`]) and its caches.
//! * [`state`] — the state directory: configuration, pid, statistics.
//! * [`cli`] — `fsbench remote create|list|stats|remove`.

pub mod cli;
pub mod model;
pub mod server;
pub mod state;

/// What simulated remotes add to every measurement: dropping caches empties their client
/// caches too, and a measurement on a remote records its traffic in the measured window.
struct RemoteHooks;

impl fsbench_engine::engine::hooks::Hooks for RemoteHooks {
    fn drop_caches(&self) -> Result<(), String> {
        cli::drop_all_client_caches()
            .map(|_| ())
            .map_err(|e| format!("{e:#}"))
    }
    fn probe(
        &self,
        dir: &std::path::Path,
    ) -> Option<Box<dyn fsbench_engine::engine::hooks::Probe>> {
        Window::start(dir).map(|w| Box::new(w) as Box<dyn fsbench_engine::engine::hooks::Probe>)
    }
}

/// The statistics of the running remote mounted over a measured directory, read when the
/// measured window opens. What a measurement does before it (a listing of the files to
/// read, a layout) crosses the modelled network too, and how much of it does depends on
/// what ran before (names fetched less than [`model::ATTR_TTL`] ago are not fetched
/// again): the experiment's modelled time is computed from the window alone.
struct Window {
    dir: state::StateDir,
    name: String,
    before: state::RemoteStats,
}

impl Window {
    fn start(dir: &std::path::Path) -> Option<Window> {
        let dir = dir.canonicalize().ok()?;
        for name in state::KIND.names() {
            let Ok(sd) = state::StateDir::new(&name) else {
                continue;
            };
            if sd.live_pid().is_none() {
                continue;
            }
            let on_it = sd.read_config().is_ok_and(|c| dir.starts_with(&c.mount));
            if on_it {
                return Some(Window {
                    before: Self::now(&sd)?,
                    dir: sd,
                    name,
                });
            }
        }
        None
    }

    fn now(sd: &state::StateDir) -> Option<state::RemoteStats> {
        cli::request(sd, Default::default()).ok()?;
        sd.read_stats()
    }
}

impl fsbench_engine::engine::hooks::Probe for Window {
    fn record(&self, r: &mut fsbench_results::stats::Results) {
        let Some(after) = Self::now(&self.dir) else {
            return;
        };
        r.remote_window = Some(window(&self.name, &after.since(&self.before)));
    }
}

/// The traffic counts of `d` (statistics over some stretch) of the remote `name`.
pub fn window(name: &str, d: &state::RemoteStats) -> fsbench_results::stats::RemoteWindow {
    fsbench_results::stats::RemoteWindow {
        name: name.to_string(),
        requests: d.requests,
        round_trips: d.round_trips,
        bytes_fetched: d.bytes_fetched,
        bytes_sent: d.bytes_sent,
        lookaside_hits: d.lookaside_hits,
        lookaside_misses: d.lookaside_misses,
        lookaside_bytes: d.lookaside_bytes,
        network_wait_s: d.network_wait_s,
    }
}

/// Register the simulated remotes' hooks with the engine (once, at start-up).
pub fn register_hooks() {
    fsbench_engine::engine::hooks::register(&RemoteHooks);
}
