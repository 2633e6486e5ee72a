//! PostMark's configuration: its `set` commands, read from a file or given as flags.

use super::super::cli::PostmarkArgs;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// PostMark's settings, with its defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub number: u32,
    pub size_low: u32,
    pub size_high: u32,
    pub transactions: u32,
    pub read_block: u32,
    pub write_block: u32,
    pub bias_read: i32,
    pub bias_create: i32,
    pub subdirectories: u32,
    pub buffered: bool,
    pub seed: u32,
    /// Directories and weights (`set location`); empty means fsbench's default directory.
    pub locations: Vec<(PathBuf, u32)>,
    pub terse: bool,
    /// Make run directories in the operating system's directories too (`--force-location`).
    pub force_location: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            number: 500,
            size_low: 500,
            size_high: 10000,
            transactions: 500,
            read_block: 512,
            write_block: 512,
            bias_read: 5,
            bias_create: 5,
            subdirectories: 0,
            buffered: true,
            seed: 42,
            locations: Vec::new(),
            terse: false,
            force_location: false,
        }
    }
}

/// One command of a configuration file.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// A setting was changed.
    Set,
    /// `run [FILE]`: run, appending the report to FILE when given.
    Run(Option<String>),
    Show,
    Quit,
}

fn positive(param: &str, what: &str) -> Result<u32> {
    let word = param.split_whitespace().next().unwrap_or("");
    match word.parse::<u32>() {
        Ok(v) if v > 0 => Ok(v),
        // PostMark keeps its settings in 32 bits; a longer number is too large, not wrong.
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => {
            bail!("{what}: {word} is too large; the largest is {}", u32::MAX)
        }
        _ => bail!("{what}: expected a positive integer, got `{param}`"),
    }
}

fn bias(param: &str) -> Result<i32> {
    match param.trim().parse::<i32>() {
        Ok(v) if (-1..=10).contains(&v) => Ok(v),
        _ => bail!("bias: expected 0 to 10 (or -1 to disable), got `{param}`"),
    }
}

impl Config {
    /// Apply one line of PostMark's command language. Commands are matched as PostMark
    /// matches them: by the longest command name the line starts with.
    pub fn apply_line(&mut self, line: &str) -> Result<Option<Command>> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(None);
        }
        const NAMES: &[&str] = &[
            "set size",
            "set number",
            "set seed",
            "set transactions",
            "set location",
            "set subdirectories",
            "set read",
            "set write",
            "set buffering",
            "set bias read",
            "set bias create",
            "set report",
            "run",
            "load",
            "show",
            "help",
            "quit",
            "exit",
        ];
        let Some(name) = NAMES.iter().find(|n| {
            line.starts_with(**n)
                && line[n.len()..]
                    .chars()
                    .next()
                    .is_none_or(char::is_whitespace)
        }) else {
            bail!("unknown PostMark command `{line}` (set size|number|seed|transactions|location|subdirectories|read|write|buffering|bias read|bias create|report, run, show, quit)");
        };
        let param = line[name.len()..].trim();
        let need = |p: &str| -> Result<()> {
            if p.is_empty() {
                bail!("`{name}` needs a value");
            }
            Ok(())
        };
        match *name {
            "set size" => {
                need(param)?;
                let mut it = param.split_whitespace();
                let low = positive(it.next().unwrap_or(""), "set size")?;
                self.size_low = low;
                // As PostMark: a high bound below the low one means a fixed size.
                self.size_high = match it.next().map(str::parse::<u32>) {
                    Some(Ok(h)) if h >= low => h,
                    _ => low,
                };
            }
            "set number" => self.number = positive(param, name)?,
            "set seed" => self.seed = positive(param, name)?,
            "set transactions" => self.transactions = positive(param, name)?,
            "set subdirectories" => self.subdirectories = positive(param, name)?,
            "set read" => self.read_block = positive(param, name)?,
            "set write" => self.write_block = positive(param, name)?,
            "set bias read" => self.bias_read = bias(param)?,
            "set bias create" => self.bias_create = bias(param)?,
            "set buffering" => {
                self.buffered = match param {
                    "true" => true,
                    "false" => false,
                    _ => bail!("set buffering: expected true or false, got `{param}`"),
                }
            }
            "set report" => {
                self.terse = match param {
                    "terse" => true,
                    "verbose" => false,
                    _ => bail!("set report: expected verbose or terse, got `{param}`"),
                }
            }
            "set location" => {
                need(param)?;
                self.set_location(param)?;
            }
            "run" => return Ok(Some(Command::Run((!param.is_empty()).then(|| param.into())))),
            "show" => return Ok(Some(Command::Show)),
            "help" => return Ok(None),
            "quit" | "exit" => return Ok(Some(Command::Quit)),
            "load" => bail!("`load` inside a configuration file is not supported; pass the file to fsbench postmark"),
            _ => unreachable!(),
        }
        Ok(Some(Command::Set))
    }

    /// `set location [+|-]DIR [WEIGHT]`: replace, add or remove a location; a trailing
    /// number is the location's weight, as in PostMark.
    fn set_location(&mut self, param: &str) -> Result<()> {
        let (op, rest) = match param.as_bytes()[0] {
            b'+' => ('+', &param[1..]),
            b'-' => ('-', &param[1..]),
            _ => ('=', param),
        };
        // A trailing number is the location's weight, as in PostMark.
        let (dir, weight) = match rest.rsplit_once(' ') {
            Some((d, w)) if op != '-' => match w.parse::<u32>() {
                Ok(w) if w > 0 => (d.trim(), w),
                _ => bail!("set location: invalid weight `{w}`"),
            },
            _ => (rest.trim(), 1),
        };
        match op {
            '+' => self.locations.push((dir.into(), weight)),
            '-' => {
                let before = self.locations.len();
                self.locations.retain(|(d, _)| d != Path::new(dir));
                if self.locations.len() == before {
                    bail!("set location: no location `{dir}` to remove");
                }
            }
            _ => self.locations = vec![(dir.into(), weight)],
        }
        Ok(())
    }

    /// Settings given as flags override the configuration file's.
    pub fn apply_flags(&mut self, a: &PostmarkArgs) -> Result<()> {
        self.force_location = a.force_location;
        if let Some(v) = a.number {
            self.apply_line(&format!("set number {v}"))?;
        }
        if let Some(v) = &a.size {
            self.apply_line(&format!("set size {}", v.replace(',', " ")))?;
        }
        if let Some(v) = a.transactions {
            self.apply_line(&format!("set transactions {v}"))?;
        }
        if let Some(v) = a.read {
            self.apply_line(&format!("set read {v}"))?;
        }
        if let Some(v) = a.write {
            self.apply_line(&format!("set write {v}"))?;
        }
        if let Some(v) = a.bias_read {
            self.apply_line(&format!("set bias read {v}"))?;
        }
        if let Some(v) = a.bias_create {
            self.apply_line(&format!("set bias create {v}"))?;
        }
        if let Some(v) = a.subdirectories {
            self.apply_line(&format!("set subdirectories {v}"))?;
        }
        if let Some(v) = a.buffering {
            self.buffered = v;
        }
        if let Some(v) = a.seed {
            self.apply_line(&format!("set seed {v}"))?;
        }
        if let Some(v) = &a.location {
            self.locations = vec![(v.clone(), 1)];
        }
        if let Some(v) = &a.report {
            self.apply_line(&format!("set report {v}"))?;
        }
        Ok(())
    }

    pub fn show(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "Current configuration is:");
        let _ = writeln!(o, "The base number of files is {}", self.number);
        let _ = writeln!(o, "Transactions: {}", self.transactions);
        if self.size_low != self.size_high {
            let _ = writeln!(
                o,
                "Files range between {} and {} bytes in size",
                self.size_low, self.size_high
            );
        } else {
            let _ = writeln!(o, "Files are {} bytes in size", self.size_low);
        }
        for (d, w) in &self.locations {
            let _ = writeln!(o, "\t{} (weight={w})", d.display());
        }
        if self.subdirectories > 0 {
            let _ = writeln!(o, "{} subdirectories will be used", self.subdirectories);
        }
        let _ = writeln!(
            o,
            "Block sizes are: read={} bytes, write={} bytes",
            self.read_block, self.write_block
        );
        let _ = writeln!(
            o,
            "Biases are: read/append={}, create/delete={}",
            self.bias_read, self.bias_create
        );
        let _ = writeln!(
            o,
            "{}sing Unix buffered file I/O",
            if self.buffered { "U" } else { "Not u" }
        );
        let _ = writeln!(o, "Random number generator seed is {}", self.seed);
        o
    }

    pub(super) fn variables(&self, instances: u32) -> BTreeMap<String, String> {
        let mut v = BTreeMap::new();
        let mut put = |k: &str, x: String| {
            v.insert(k.to_string(), x);
        };
        put("number", self.number.to_string());
        put("size", format!("{} {}", self.size_low, self.size_high));
        put("transactions", self.transactions.to_string());
        put("read", self.read_block.to_string());
        put("write", self.write_block.to_string());
        put("bias_read", self.bias_read.to_string());
        put("bias_create", self.bias_create.to_string());
        put("subdirectories", self.subdirectories.to_string());
        put("buffering", self.buffered.to_string());
        put("seed", self.seed.to_string());
        put("instances", instances.to_string());
        v
    }
}

// ---------------------------------------------------------------------------------------
// One instance
