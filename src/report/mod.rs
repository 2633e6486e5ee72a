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

use crate::export::Format;
use crate::stats::Results;

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

pub use crate::units::count;

#[cfg(test)]
mod count_tests {
    #[test]
    fn plurals() {
        assert_eq!(super::count(1u64, "thread"), "1 thread");
        assert_eq!(super::count(0u64, "file"), "0 files");
        assert_eq!(super::count(3u64, "directory"), "3 directories");
        assert_eq!(super::count(1u64, "directory"), "1 directory");
        assert_eq!(super::count(2u64, "entry"), "2 entries");
        assert_eq!(super::count(2u64, "day"), "2 days");
    }
}
