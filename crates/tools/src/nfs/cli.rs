//! `fsbench nfs create|list|remove`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use super::backing::Backing;
use super::server::{self, Options};
use super::state::Version;

/// NFS servers on this machine (NFS-Ganesha over a directory fsbench makes), for clients
/// that speak NFS (libnfs URLs).
#[derive(clap::Args, Debug)]
pub struct NfsArgs {
    #[command(subcommand)]
    pub command: NfsCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum NfsCommand {
    /// Start an NFS server on 127.0.0.1 exporting a directory fsbench makes; prints its URL.
    Create(CreateArgs),
    /// List NFS servers: name, URL, pid, state.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Stop a server and undo what `create` made: ganesha, the export, the image, rpcbind if
    /// fsbench started it and nothing needs it.
    Remove {
        /// The server's name, as given to `nfs create` (see `nfs list`).
        name: String,
    },
}

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("export").required(true).args(["image", "dir"])))]
pub struct CreateArgs {
    /// Name of the server (letters, digits, '-', '_', '.'): the export is /NAME in its URL.
    pub name: String,
    /// Export a new file system on a new image of this size (K, M, G: powers of 1024),
    /// made with --mkfs and mounted under fsbench's state directory.
    #[arg(long, value_parser = fsbench_base::units::parse_size, requires = "mkfs")]
    pub image: Option<u64>,
    /// File system for --image (ext4, xfs, btrfs, or any mkfs.TYPE).
    #[arg(long, requires = "image")]
    pub mkfs: Option<String>,
    /// Export a new directory fsbench makes inside DIR (DIR/fsbench-nfs-NAME/export); DIR
    /// itself is never exported nor changed.
    #[arg(long, conflicts_with = "image")]
    pub dir: Option<PathBuf>,
    /// NFS version the server speaks (and the URL names).
    #[arg(long, value_enum, default_value = "3")]
    pub version: Version,
    /// Seconds to wait for the export to answer.
    #[arg(long, default_value_t = 30)]
    pub timeout: u64,
}

pub fn run(args: NfsArgs) -> Result<()> {
    match args.command {
        NfsCommand::Create(a) => create(&a),
        NfsCommand::List { json } => list(json),
        NfsCommand::Remove { name } => {
            fsbench_base::outln!("{}", server::stop(&name)?);
            Ok(())
        }
    }
}

fn create(a: &CreateArgs) -> Result<()> {
    fsbench_base::cancel::install_signal_handlers();
    let backing = match (&a.image, &a.mkfs, &a.dir) {
        (Some(size), Some(fs), None) => Backing::Image {
            size: *size,
            fs: fs.clone(),
        },
        (None, None, Some(d)) => Backing::Dir(d.clone()),
        _ => {
            return Err(fsbench_base::exit::usage(
                "give --image SIZE --mkfs FS, or --dir DIR",
            ))
        }
    };
    let mut o = Options::new(&a.name, backing, a.version);
    o.timeout = Duration::from_secs(a.timeout.max(1));
    let s = server::start(&o)?;
    fsbench_base::errln!(
        "{}: NFSv{} server (ganesha.nfsd pid {}) exporting {}",
        s.name(),
        s.version().number(),
        s.pid().unwrap_or(0),
        s.export_dir().display()
    );
    fsbench_base::outln!("{}", s.url());
    Ok(())
}

fn list(json: bool) -> Result<()> {
    let rows = server::list();
    let values: Vec<serde_json::Value> = rows
        .iter()
        .map(serde_json::to_value)
        .collect::<std::result::Result<_, _>>()?;
    let none = format!(
        "no NFS servers (state in {})",
        super::state::state_root().display()
    );
    if !fsbench_base::daemon::state::list_rows(&values, json, &none)? {
        return Ok(());
    }
    fsbench_base::outln!("{:<16} {:<8} {:>8}  URL", "NAME", "STATE", "PID");
    for r in rows {
        fsbench_base::outln!(
            "{:<16} {:<8} {:>8}  {}",
            r.name,
            r.state,
            r.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
            r.url
        );
    }
    Ok(())
}
