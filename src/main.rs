use clap::{Parser, Subcommand};

/// fsbench: a file-system benchmarking workbench.
#[derive(Parser)]
#[command(name = "fsbench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {}
}
