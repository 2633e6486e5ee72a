//! Measurements whose cold cells a plan runs although a cold cache changes little of
//! them: they read nothing that was on disk before they started
//! ([`crate::experiment::plan::Measurement::cache_blind`]). Said when the plan is read
//! (`--dry-run` and before running), so that the time is not spent unknowingly.

use super::{Cell, Plan};
use std::collections::BTreeSet;

/// The measurements sharing one reason: where the first is defined, their names, their
/// cold cells, and whether they run warm too.
struct Blind<'a> {
    at: &'a str,
    why: &'a str,
    names: Vec<&'a str>,
    cold: Vec<&'a Cell>,
    warm: bool,
}

/// A warning per reason (one workload measured at several settings says it once) for the
/// measurements that run cold (or remounted) cells although they read nothing that was on
/// disk before they started: their cold cells measure a page cache the run filled itself.
/// `fsbench results` marks such cells when the runs bear it out.
pub fn cache_warnings(plan: &Plan, cells: &[Cell]) -> Vec<String> {
    let mut by_why: Vec<Blind> = Vec::new();
    for (mi, m) in plan.measurements.iter().enumerate() {
        let Some((at, why)) = &m.cache_blind else {
            continue;
        };
        let mine = cells.iter().filter(|c| c.measurement == mi);
        let cold: Vec<&Cell> = mine
            .clone()
            .filter(|c| matches!(c.cache.as_str(), "cold" | "remount"))
            .collect();
        if cold.is_empty() {
            continue;
        }
        let warm = mine.clone().any(|c| c.cache == "warm");
        match by_why.iter_mut().find(|b| b.why == why) {
            Some(b) => {
                b.names.push(&m.name);
                b.cold.extend(cold);
                b.warm |= warm;
            }
            None => by_why.push(Blind {
                at,
                why,
                names: vec![&m.name],
                cold,
                warm,
            }),
        }
    }
    by_why.iter().map(warning).collect()
}

fn warning(b: &Blind) -> String {
    let one = b.names.len() == 1;
    let levels: BTreeSet<String> = b.cold.iter().map(|c| format!("\"{}\"", c.cache)).collect();
    let numbers: Vec<usize> = b.cold.iter().map(|c| c.idx + 1).collect();
    format!(
        "{}: {} `{}` {} with cache = {} ({}), but a cold cache changes little of {}: {}, so what it reads the run itself put in the page cache{}. `fsbench results` marks a cold cell whose reads the page cache served all the same",
        b.at,
        if one { "measurement" } else { "measurements" },
        b.names.join("`, `"),
        if one { "runs" } else { "run" },
        levels.into_iter().collect::<Vec<_>>().join(" and "),
        cell_list(&numbers),
        if one { "it" } else { "them" },
        b.why,
        if b.warm {
            "; its cold and warm cells measure much the same"
        } else {
            ""
        }
    )
}

/// Cell numbers in words, runs of consecutive ones as ranges: "cell 3", "cells 1-4, 7".
fn cell_list(numbers: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let mut j = i;
        while j + 1 < numbers.len() && numbers[j + 1] == numbers[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", numbers[i], numbers[j])
        } else {
            numbers[i].to_string()
        });
        i = j + 1;
    }
    let noun = if numbers.len() == 1 { "cell" } else { "cells" };
    format!("{noun} {}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_numbers_read_as_ranges() {
        assert_eq!(cell_list(&[3]), "cell 3");
        assert_eq!(cell_list(&[1, 2, 3, 4, 7, 9, 10]), "cells 1-4, 7, 9-10");
    }
}
