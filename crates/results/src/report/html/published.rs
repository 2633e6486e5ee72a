//! The "published vs ours" table near the top of an experiment's report: per published
//! figure, the paper's figure and rule, ours with its 95% interval, and the verdict the
//! experiment computed (the report only shows it).

use super::{esc, ReportInput};
use std::fmt::Write;

/// The table, when the experiment's plan carries published figures.
pub(super) fn section(out: &mut String, input: &ReportInput) {
    if input.published.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<section class=published id=published><h2>Published vs ours</h2><p class=vars>Each row judges one of our cells (or the ratio of two) against a figure of the paper, by the rule the plan states before the run (docs/experiments.md, \"Published figures\"). Verdicts: {}.</p>\
         <table class=published><tr><th>claim</th><th>plan line</th><th>figure</th><th>compared</th><th>published (rule)</th><th>ours [95% CI]</th><th>n</th><th>verdict</th><th>why</th></tr>",
        esc(&input.published_tally)
    );
    for p in &input.published {
        let _ = write!(
            out,
            "<tr class=\"verdict-{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><b>{}</b></td><td class=why>{}</td></tr>",
            esc(&p.verdict.replace(' ', "-")),
            esc(&p.claim),
            p.line,
            esc(&p.figure),
            esc(&p.what),
            esc(&p.published),
            esc(&p.ours),
            esc(&p.n),
            esc(&p.verdict),
            esc(&p.why)
        );
    }
    out.push_str("</table></section>\n");
}

#[cfg(test)]
mod tests {
    use super::super::PublishedLine;
    use super::*;

    #[test]
    fn rows_carry_their_verdict_and_are_escaped() {
        let mut input = ReportInput::default();
        let mut out = String::new();
        section(&mut out, &input);
        assert!(out.is_empty(), "no table without published figures");
        input.published.push(PublishedLine {
            line: 12,
            claim: "cold find <80% longer>".into(),
            verdict: "direction only".into(),
            ..Default::default()
        });
        input.published_tally = "1 direction only".into();
        section(&mut out, &input);
        assert!(
            out.contains("<tr class=\"verdict-direction-only\">"),
            "{out}"
        );
        assert!(out.contains("cold find &lt;80% longer&gt;"), "{out}");
        assert!(out.contains("Verdicts: 1 direction only."), "{out}");
    }
}
