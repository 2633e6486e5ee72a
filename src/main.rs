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
    /// Walk a tree in parallel, summarise it and write a metadata snapshot.
    Scan(fsbench::scan::ScanArgs),
    /// Smith–Seltzer layout score of the files under a directory (FIEMAP).
    Layout(fsbench::layout::LayoutArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Scan(a) => fsbench::scan::run(a),
        Command::Layout(a) => fsbench::layout::run(a),
    }
}
