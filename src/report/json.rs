//! JSON: the interchange format (documented in docs/results.md).

use super::Exporter;
use crate::stats::Results;

pub struct Json;

impl Exporter for Json {
    fn render(&self, r: &Results) -> String {
        let mut s = serde_json::to_string_pretty(r).expect("results serialize");
        s.push('\n');
        s
    }
}
