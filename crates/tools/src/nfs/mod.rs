//! NFS servers fsbench starts and stops itself: NFS-Ganesha (VFS FSAL) exporting a directory
//! fsbench makes, on 127.0.0.1, for clients that speak the protocol (libnfs URLs).
//!
//! ```text
//!  client (nfs-ls, a libnfs client) ── nfs://127.0.0.1/NAME?nfsport=P&mountport=M&version=3
//!          │ TCP on loopback, ports fsbench picked
//!   ganesha.nfsd -F -f STATE/ganesha.conf  (registered with rpcbind, started if none runs)
//!          │ VFS FSAL
//!   export: STATE/mnt/export on a new image's file system (loop device, mkfs, mount),
//!           or DIR/fsbench-nfs-NAME/export inside a directory the user names
//! ```
//!
//! See docs/guide/nfs.md, and docs/safety.md for what is checked before anything is stopped
//! or deleted.
//!
//! * [`server`] — the library API: `start(&Options) -> Server` (`url()`, `stop()`), `stop`,
//!   `list`.
//! * [`backing`] — the exported directory: made, recorded, undone.
//! * [`ganesha`] — ganesha's configuration, start, identity and stop.
//! * [`rpcbind`] — rpcbind: started when missing, stopped when fsbench started it and
//!   nothing needs it; the registrations NFS-Ganesha would clear.
//! * [`state`] — the state directory and its records.
//! * [`cli`] — `fsbench nfs create|list|remove`.

pub mod backing;
pub mod cli;
pub mod ganesha;
pub mod rpcbind;
pub mod server;
pub mod state;
