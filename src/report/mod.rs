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

/// Renders results in one format.
pub trait Exporter {
    fn render(&self, r: &Results) -> String;
}

/// Renderer for a format name (`text`, `json`).
pub fn exporter(format: &str) -> Option<Box<dyn Exporter>> {
    match format {
        "text" => Some(Box::new(text::Text)),
        "json" => Some(Box::new(json::Json::default())),
        "csv" => Some(Box::new(csv::Csv)),
        "markdown" => Some(Box::new(markdown::Markdown)),
        _ => None,
    }
}
