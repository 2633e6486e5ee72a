//! What `fsbench results` needs of the stored plan beyond the database's columns: each
//! measurement's chosen headline figures, the adaptive repetitions and the `compare` pairs.
//! Read from the plan's stored text (validated when the experiment ran), leniently: the
//! plan's targets and workloads need not exist any more.

use crate::experiment::plan::published::{self, Published};
use crate::experiment::plan::{level_text, Adaptive};
use toml::Value;

#[derive(Debug, Default, Clone)]
pub struct PlanChoices {
    /// Measurement name → its `figures = [...]`.
    pub figures: Vec<(String, Vec<String>)>,
    pub adaptive: Option<Adaptive>,
    pub compare: crate::experiment::plan::ComparePairs,
    /// The paper's figures (`[[published]]`).
    pub published: Vec<Published>,
    /// How their cells repeat (`None` without entries, or when the quick scale fixes the
    /// repetitions).
    pub published_rounds: Option<Adaptive>,
}

impl PlanChoices {
    pub fn read(text: &str, quick: bool) -> PlanChoices {
        let Ok(v) = text.parse::<toml::Table>() else {
            return PlanChoices::default();
        };
        let figures = v
            .get("measurement")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| {
                let name = m.get("name")?.as_str()?.to_string();
                let figs = m.get("figures")?.as_array()?;
                Some((
                    name,
                    figs.iter()
                        .filter_map(|f| f.as_str().map(String::from))
                        .collect(),
                ))
            })
            .collect();
        let quick_reps = v
            .get("quick")
            .and_then(|q| q.get("repetitions"))
            .filter(|_| quick);
        let reps = quick_reps.or_else(|| v.get("experiment").and_then(|e| e.get("repetitions")));
        let compare = v
            .get("experiment")
            .and_then(|e| e.get("compare"))
            .and_then(Value::as_table)
            .into_iter()
            .flatten()
            .filter_map(|(factor, pairs)| {
                let pairs = pairs
                    .as_table()?
                    .iter()
                    .filter_map(|(level, with)| Some((level.clone(), level_text(with)?)))
                    .collect();
                Some((factor.clone(), pairs))
            })
            .collect();
        let adaptive = reps.and_then(adaptive_of);
        let published = published::stored(text);
        let count = reps
            .and_then(Value::as_integer)
            .unwrap_or(1)
            .clamp(1, u32::MAX as i64) as u32;
        let published_rounds = (!published.is_empty() && quick_reps.is_none())
            .then(|| published::rounds(count, adaptive));
        PlanChoices {
            figures,
            adaptive,
            compare,
            published,
            published_rounds,
        }
    }

    /// A measurement's headline figures: the plan's choice, or its kind's.
    pub fn headline(&self, measurement: &str, kind: &str) -> Vec<String> {
        match self.figures.iter().find(|(m, _)| m == measurement) {
            Some((_, f)) => f.clone(),
            None => super::super::headline::headline(kind)
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }
}

fn adaptive_of(v: &Value) -> Option<Adaptive> {
    let t = v.as_table()?;
    let int = |k: &str| t.get(k).and_then(Value::as_integer).map(|i| i as u32);
    let ci = t
        .get("ci")
        .and_then(|c| c.as_float().or(c.as_integer().map(|i| i as f64)))?;
    Some(Adaptive {
        min: int("min")?,
        max: int("max")?,
        ci,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_figures_and_adaptive_repetitions() {
        let t = r#"
[experiment]
name = "x"
repetitions = { min = 3, max = 30, ci = 0.05 }
[quick]
repetitions = 2
[[measurement]]
name = "pm"
kind = "postmark"
figures = ["total_s"]
[[measurement]]
name = "w"
kind = "workload"
"#;
        let c = PlanChoices::read(t, false);
        assert_eq!(
            c.adaptive,
            Some(Adaptive {
                min: 3,
                max: 30,
                ci: 0.05
            })
        );
        assert_eq!(c.headline("pm", "postmark"), ["total_s"]);
        assert_eq!(c.headline("w", "workload")[0], "ops_per_s");
        assert_eq!(PlanChoices::read(t, true).adaptive, None);
        assert!(c.compare.is_empty());
    }

    #[test]
    fn reads_compare_pairs() {
        let t = r#"
[experiment]
name = "x"
repetitions = 3
compare = { target = { ovl-xfs = "xfs", ovl-ext4 = "ext4" }, instances = { 8 = 1 } }
"#;
        let c = PlanChoices::read(t, false);
        assert_eq!(
            c.compare,
            [
                ("instances".to_string(), vec![("8".into(), "1".into())]),
                (
                    "target".to_string(),
                    vec![
                        ("ovl-ext4".into(), "ext4".into()),
                        ("ovl-xfs".into(), "xfs".into())
                    ]
                ),
            ]
        );
    }
}
