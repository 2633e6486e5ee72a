use clap::{Parser, Subcommand};

/// fsbench: a file-system benchmarking workbench.
#[derive(Parser)]
#[command(name = "fsbench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulated disks: an HDD model under a loop device.
    Disk(fsbench::disk::cli::DiskArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Disk(args) => fsbench::disk::cli::run(args),
    }
}
