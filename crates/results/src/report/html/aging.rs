//! The aging section of the report: per aging report (`fsbench age --json`), fullness,
//! operations and distance to the profile, the layout score and fragments before and after,
//! each distribution against its profile, and files by number of fragments.
//!
//! An aging report is read into [`Aging`], the part of `age::report::AgeReport` the report
//! shows (the report stands below the aging code; a test there keeps the two in step).

use super::{chart_block, charts, esc, g4, table};
use charts::Bar;
use serde::{Deserialize, Deserializer};
use std::fmt::Write;

/// What the report shows of an aging report.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Aging {
    #[serde(default)]
    pub profile: Option<String>,
    #[serde(default)]
    pub fullness_start: Option<f64>,
    #[serde(default)]
    pub fullness_end: Option<f64>,
    /// Present (possibly null) in every aging report: `Some(_)` when it was there.
    #[serde(default, deserialize_with = "present")]
    pub target_fill: Option<Option<f64>>,
    #[serde(default)]
    pub ops: Option<f64>,
    #[serde(default)]
    pub elapsed_s: Option<f64>,
    #[serde(default)]
    pub converged: Option<bool>,
    #[serde(default)]
    pub distances: Option<Distances>,
    #[serde(default)]
    pub distributions: Option<Distributions>,
    #[serde(default)]
    pub layout_before: Option<LayoutFacts>,
    /// Present (possibly null) in every aging report: `Some(_)` when it was there.
    #[serde(default, deserialize_with = "present")]
    pub layout_after: Option<Option<LayoutFacts>>,
}

/// A field that is there, whether null or not.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Total variation distance per dimension.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Distances {
    #[serde(default)]
    pub size: Option<Distance>,
    #[serde(default)]
    pub depth: Option<Distance>,
    #[serde(default)]
    pub age: Option<Distance>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Distance {
    #[serde(default)]
    pub tv: Option<f64>,
}

/// The aged population against the profile, per dimension.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Distributions {
    #[serde(default)]
    pub size: Option<Distribution>,
    #[serde(default)]
    pub depth: Option<Distribution>,
    #[serde(default)]
    pub age: Option<Distribution>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Distribution {
    #[serde(default)]
    pub buckets: Vec<String>,
    /// Shares of files, 0..1.
    #[serde(default)]
    pub target: Vec<Option<f64>>,
    #[serde(default)]
    pub actual: Vec<Option<f64>>,
    #[serde(default)]
    pub counts: Vec<u64>,
}

/// The layout before or after aging.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct LayoutFacts {
    #[serde(default)]
    pub score: Option<f64>,
    #[serde(default)]
    pub fragments: Option<f64>,
    #[serde(default)]
    pub fragments_per_file: Vec<FragmentRow>,
}

/// Files with `lo..hi` fragments.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct FragmentRow {
    #[serde(default)]
    pub lo: u64,
    #[serde(default)]
    pub hi: u64,
    #[serde(default)]
    pub count: u64,
}

impl Aging {
    /// An aging report's text read, or `None` when it is not one (it has no `target_fill`
    /// and `layout_after`).
    pub fn parse(text: &str) -> Option<Aging> {
        if !(text.contains("\"target_fill\"") && text.contains("\"layout_after\"")) {
            return None;
        }
        let a: Aging = serde_json::from_str(text).ok()?;
        (a.target_fill.is_some() && a.layout_after.is_some()).then_some(a)
    }

    fn layout(&self, when: When) -> Option<&LayoutFacts> {
        match when {
            When::Before => self.layout_before.as_ref(),
            When::After => self.layout_after.as_ref().and_then(|l| l.as_ref()),
        }
    }

    fn distribution(&self, key: &str) -> Option<&Distribution> {
        let d = self.distributions.as_ref()?;
        match key {
            "size" => d.size.as_ref(),
            "depth" => d.depth.as_ref(),
            _ => d.age.as_ref(),
        }
    }

    fn tv(&self, key: &str) -> Option<f64> {
        let d = self.distances.as_ref()?;
        match key {
            "size" => d.size.as_ref()?.tv,
            "depth" => d.depth.as_ref()?.tv,
            _ => d.age.as_ref()?.tv,
        }
    }
}

#[derive(Clone, Copy)]
enum When {
    Before,
    After,
}

/// Distributions an aging report compares with its profile: key and axis title.
const AGING_DIMENSIONS: [(&str, &str); 3] = [
    ("size", "file size (bucket upper bound)"),
    ("depth", "directory depth below the aged directory"),
    ("age", "file age (bucket upper bound, operations)"),
];

/// The ids of the aging section's charts, in page order.
pub fn chart_ids(aging: &[(String, Aging)]) -> Vec<String> {
    let mut ids = Vec::new();
    if aging.is_empty() {
        return ids;
    }
    ids.push("aging-score".into());
    ids.push("aging-fragments".into());
    for (i, (_, v)) in aging.iter().enumerate() {
        for (key, _) in AGING_DIMENSIONS {
            if v.distribution(key).is_some() {
                ids.push(format!("aging-{i}-{key}"));
            }
        }
        if has_fragment_rows(v) {
            ids.push(format!("aging-{i}-fragments-per-file"));
        }
    }
    ids
}

fn has_fragment_rows(v: &Aging) -> bool {
    [When::Before, When::After].iter().any(|w| {
        v.layout(*w)
            .is_some_and(|l| !l.fragments_per_file.is_empty())
    })
}

/// Per aging report: each distribution against its profile (grouped bars, shares of
/// files), and files per number of fragments before and after.
fn aging_distributions(out: &mut String, i: usize, label: &str, v: &Aging) {
    for (key, x_desc) in AGING_DIMENSIONS {
        let Some(d) = v.distribution(key) else {
            continue;
        };
        let pct = |xs: &[Option<f64>]| -> Vec<f64> {
            xs.iter().map(|x| x.unwrap_or(0.0) * 100.0).collect()
        };
        let buckets = d.buckets.clone();
        if buckets.is_empty() {
            continue;
        }
        let (target, actual) = (pct(&d.target), pct(&d.actual));
        let counts: Vec<String> = d.counts.iter().map(|c| c.to_string()).collect();
        let svg = charts::grouped(
            &format!("{label}: {key} distribution, profile against aged"),
            x_desc,
            "files (%)",
            &buckets,
            &[
                ("profile".into(), target.clone()),
                ("aged".into(), actual.clone()),
            ],
        );
        let rows: Vec<Vec<String>> = buckets
            .iter()
            .enumerate()
            .map(|(b, name)| {
                vec![
                    name.clone(),
                    target.get(b).map(|x| format!("{x:.2}")).unwrap_or_default(),
                    actual.get(b).map(|x| format!("{x:.2}")).unwrap_or_default(),
                    counts.get(b).cloned().unwrap_or_default(),
                ]
            })
            .collect();
        let tbl = table(
            &[
                key.into(),
                "profile (% of files)".into(),
                "aged (% of files)".into(),
                "aged files".into(),
            ],
            &rows,
        );
        chart_block(out, &format!("aging-{i}-{key}"), &svg, &tbl);
    }
    if has_fragment_rows(v) {
        fragments_chart(out, i, label, v);
    }
}

/// Files by number of fragments before and after aging, over the buckets of both layouts
/// (1, 2-3, 4-7, ... fragments).
fn fragments_chart(out: &mut String, i: usize, label: &str, v: &Aging) {
    let rows_of = |w: When| -> Vec<(u64, u64, u64)> {
        v.layout(w)
            .map(|l| {
                l.fragments_per_file
                    .iter()
                    .map(|r| (r.lo, r.hi, r.count))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (before, after) = (rows_of(When::Before), rows_of(When::After));
    let mut los: Vec<(u64, u64)> = before
        .iter()
        .chain(&after)
        .map(|&(lo, hi, _)| (lo, hi))
        .collect();
    los.sort();
    los.dedup();
    let cats: Vec<String> = los
        .iter()
        .map(|&(lo, hi)| {
            if hi <= lo + 1 {
                lo.to_string()
            } else {
                format!("{lo}-{}", hi - 1)
            }
        })
        .collect();
    let count = |rows: &[(u64, u64, u64)], lo: u64| -> f64 {
        rows.iter().find(|r| r.0 == lo).map_or(0.0, |r| r.2 as f64)
    };
    let b: Vec<f64> = los.iter().map(|&(lo, _)| count(&before, lo)).collect();
    let a: Vec<f64> = los.iter().map(|&(lo, _)| count(&after, lo)).collect();
    let svg = charts::grouped(
        &format!("{label}: files by number of fragments"),
        "fragments per file",
        "files",
        &cats,
        &[
            ("before aging".into(), b.clone()),
            ("after aging".into(), a.clone()),
        ],
    );
    let rows: Vec<Vec<String>> = cats
        .iter()
        .enumerate()
        .map(|(k, c)| vec![c.clone(), format!("{:.0}", b[k]), format!("{:.0}", a[k])])
        .collect();
    let tbl = table(
        &[
            "fragments".into(),
            "files before".into(),
            "files after".into(),
        ],
        &rows,
    );
    chart_block(out, &format!("aging-{i}-fragments-per-file"), &svg, &tbl);
}

/// The aging section: per aging report, the layout score and fragments before and after,
/// and how far the result is from the profile.
pub fn section(out: &mut String, aging: &[(String, Aging)]) {
    out.push_str("<section><h2>Aging</h2><table class=configs><tr><th>report</th><th>profile</th><th>fullness (start → end, target)</th><th>operations</th><th>seconds</th><th>converged</th><th>distance to profile (size, depth, age; total variation)</th></tr>");
    for (label, v) in aging {
        let f = |x: Option<f64>| x.map(|x| format!("{:.1}%", x * 100.0)).unwrap_or_default();
        let d = |k: &str| v.tv(k).map(g4).unwrap_or_default();
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{} → {} ({})</td><td>{}</td><td>{}</td><td>{}</td><td>{}, {}, {}</td></tr>",
            esc(label),
            esc(v.profile.as_deref().unwrap_or("")),
            f(v.fullness_start),
            f(v.fullness_end),
            f(v.target_fill.flatten()),
            v.ops.map(|x| format!("{x:.0}")).unwrap_or_default(),
            v.elapsed_s.map(g4).unwrap_or_default(),
            v.converged.map(|c| if c { "yes" } else { "no" }).unwrap_or(""),
            d("size"),
            d("depth"),
            d("age")
        );
    }
    out.push_str("</table><div class=grid>");
    for (id, key, title, unit) in [
        (
            "aging-score",
            "score",
            "Layout score before and after aging (1 = every file contiguous)",
            "layout score",
        ),
        (
            "aging-fragments",
            "fragments",
            "Fragments before and after aging",
            "fragments",
        ),
    ] {
        let mut labels = Vec::new();
        let mut bars = Vec::new();
        let mut rows = Vec::new();
        for (label, v) in aging {
            for (when, word) in [(When::Before, "before"), (When::After, "after")] {
                let x = v.layout(when).and_then(|l| match key {
                    "score" => l.score,
                    _ => l.fragments,
                });
                let l = format!("{label} {word}");
                rows.push(vec![
                    l.clone(),
                    x.map(g4).unwrap_or_else(|| "not measured".into()),
                ]);
                labels.push(l);
                bars.push(Bar {
                    mean: x.unwrap_or(0.0),
                    ci95: 0.0,
                    note: String::new(),
                });
            }
        }
        let svg = charts::bars(title, unit, &labels, &bars);
        let tbl = table(&["report".into(), unit.into()], &rows);
        chart_block(out, id, &svg, &tbl);
    }
    for (i, (label, v)) in aging.iter().enumerate() {
        aging_distributions(out, i, label, v);
    }
    out.push_str("</div></section>\n");
}
