//! JSON: the interchange format (documented in docs/results.md).
//!
//! Histograms hold one `[value_ns, count]` pair per non-empty bucket, thousands for a short
//! run. Pretty-printed one number per line they swamp the file (26k lines for a 1 s run), so
//! by default each histogram is written on one line; `--histograms full` keeps serde's layout
//! and `none` leaves them out (results without histograms still compare, on their summary
//! figures, but cannot be merged).

use super::Exporter;
use crate::stats::Results;

/// How `histogram_ns` arrays are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Histograms {
    /// Left out (empty arrays).
    None,
    /// One line per histogram.
    #[default]
    Compact,
    /// One number per line, as serde pretty-prints.
    Full,
}

#[derive(Default)]
pub struct Json {
    pub histograms: Histograms,
}

impl Exporter for Json {
    fn render(&self, r: &Results) -> String {
        let mut s = match self.histograms {
            Histograms::Full => serde_json::to_string_pretty(r).expect("results serialize"),
            Histograms::Compact => {
                compact_arrays(&serde_json::to_string_pretty(r).expect("results serialize"))
            }
            Histograms::None => {
                let mut r = r.clone();
                for f in &mut r.flowops {
                    f.histogram_ns.clear();
                }
                serde_json::to_string_pretty(&r).expect("results serialize")
            }
        };
        s.push('\n');
        s
    }
}

/// Put every `"histogram_ns": [...]` array of pretty-printed JSON on one line. The arrays hold
/// only numbers and brackets, so removing their whitespace changes nothing else.
fn compact_arrays(pretty: &str) -> String {
    const KEY: &str = "\"histogram_ns\": [";
    let mut out = String::with_capacity(pretty.len() / 4);
    let mut rest = pretty;
    while let Some(i) = rest.find(KEY) {
        out.push_str(&rest[..i + KEY.len()]);
        rest = &rest[i + KEY.len()..];
        let mut depth = 1;
        let mut end = rest.len();
        for (j, c) in rest.char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = j;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.extend(rest[..end].chars().filter(|c| !c.is_whitespace()));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::compact_arrays;

    #[test]
    fn histograms_on_one_line_and_same_value() {
        let v = serde_json::json!({
            "a": {"histogram_ns": [[1, 2], [30, 4]], "x": [1, 2]},
            "b": [{"histogram_ns": []}]
        });
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        let c = compact_arrays(&pretty);
        assert!(c.contains("\"histogram_ns\": [[1,2],[30,4]]"), "{c}");
        assert!(c.contains("\"histogram_ns\": []"), "{c}");
        assert!(c.lines().count() < pretty.lines().count());
        let back: serde_json::Value = serde_json::from_str(&c).unwrap();
        assert_eq!(back, v);
    }
}
