//! A daemon's state files: JSON written whole (readers never see half) and read back,
//! and how `list` shows a daemon's state.

use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

pub fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> anyhow::Result<T> {
    let text = crate::input::read_text(path, crate::input::STATE)
        .with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// Write JSON through a temporary file and rename, so readers never see half.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    crate::owned::path::write_atomic(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

/// A daemon's state as `list` shows it: "running", "starting" (alive, not ready yet) or
/// "stopped".
pub fn state_word(alive: bool, ready: bool) -> &'static str {
    match (alive, ready) {
        (true, true) => "running",
        (true, false) => "starting",
        (false, _) => "stopped",
    }
}

/// The start of a daemon kind's `list`: its rows as JSON with `json`, or a line saying there
/// are none (`none`) on standard error. Whether the table of `rows` is still to be printed.
pub fn list_rows(rows: &[serde_json::Value], json: bool, none: &str) -> anyhow::Result<bool> {
    if json {
        crate::outln!("{}", serde_json::to_string_pretty(rows)?);
        return Ok(false);
    }
    if rows.is_empty() {
        crate::errln!("{none}");
        return Ok(false);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::{list_rows, state_word};

    #[test]
    fn a_daemon_is_starting_until_it_is_ready() {
        assert_eq!(state_word(true, true), "running");
        assert_eq!(state_word(true, false), "starting");
        assert_eq!(state_word(false, true), "stopped");
        // No rows: nothing left to print as a table, with or without --json.
        assert!(!list_rows(&[], false, "none").unwrap());
        assert!(!list_rows(&[], true, "none").unwrap());
        assert!(list_rows(&[serde_json::json!({"name": "x"})], false, "none").unwrap());
    }
}
