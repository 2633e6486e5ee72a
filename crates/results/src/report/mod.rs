//! Reports: one renderer per format behind one trait, each reading only [`Results`].

pub mod compare;
pub mod csv;
pub mod fio;
pub mod fio_json;
pub mod fio_log;
pub mod fio_terse;
pub mod html;
pub mod json;
pub mod markdown;
pub mod out;
pub mod text;

use crate::stats::Results;
use fsbench_base::export::Format;

/// Renders results in one format.
pub trait Exporter {
    fn render(&self, r: &Results) -> String;
}

/// The renderer of `Results` in `format` (the HTML page renders a `ReportInput` instead).
pub fn exporter(format: Format) -> Option<Box<dyn Exporter>> {
    match format {
        Format::Text => Some(Box::new(text::Text)),
        Format::Json => Some(Box::new(json::Json::default())),
        Format::Csv => Some(Box::new(csv::Csv)),
        Format::Markdown => Some(Box::new(markdown::Markdown)),
        Format::Html => None,
    }
}
