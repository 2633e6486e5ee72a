//! Diagnostics: every error in a workload names the file, line and column, and shows the line
//! with a caret under the offending text.

use super::source::{SourceFile, Span};
use std::fmt;
use std::sync::Arc;

/// One error (or warning) located in a workload's source.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    pub source: Arc<SourceFile>,
    pub span: Span,
    pub message: String,
    pub help: Option<String>,
    pub warning: bool,
}

impl Diagnostic {
    pub fn error(source: &Arc<SourceFile>, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            source: source.clone(),
            span,
            message: message.into(),
            help: None,
            warning: false,
        }
    }

    pub fn warning(source: &Arc<SourceFile>, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            warning: true,
            ..Diagnostic::error(source, span, message)
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// `(line, column)`, both 1-based.
    pub fn line_col(&self) -> (usize, usize) {
        self.source.line_col(self.span.start)
    }

    /// `file:line:col`
    pub fn location(&self) -> String {
        let (l, c) = self.line_col();
        format!("{}:{}:{}", self.source.name, l, c)
    }
}

/// Characters of a source line shown at most.
const SHOWN: usize = 120;

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (line, col) = self.line_col();
        let kind = if self.warning { "warning" } else { "error" };
        writeln!(f, "{kind}: {}", self.message)?;
        let num = line.to_string();
        let pad = " ".repeat(num.len());
        writeln!(f, "{pad}--> {}:{}:{}", self.source.name, line, col)?;
        writeln!(f, "{pad} |")?;
        let text = self.source.line_text(line);
        // A long line is shown in part, around the column: a generated workload's line can
        // be megabytes long.
        let total = text.chars().count();
        let first = if total > SHOWN {
            (col - 1).saturating_sub(SHOWN / 3).min(total - SHOWN)
        } else {
            0
        };
        let lead = if first > 0 { "…" } else { "" };
        let tail = if first + SHOWN < total { "…" } else { "" };
        let shown: String = text
            .chars()
            .skip(first)
            .take(SHOWN)
            .map(|c| if c == '\t' { ' ' } else { c })
            .collect();
        writeln!(f, "{num} | {lead}{shown}{tail}")?;
        // Caret width: the span's characters on this line, at least one, within what is shown.
        let (eline, ecol) = self.source.line_col(self.span.end.max(self.span.start));
        let at = col - 1 - first;
        let width = if eline == line && ecol > col {
            ecol - col
        } else {
            1
        };
        write!(
            f,
            "{pad} | {}{}{}",
            " ".repeat(lead.chars().count()),
            " ".repeat(at),
            "^".repeat(width.min(SHOWN.saturating_sub(at)).max(1))
        )?;
        if let Some(help) = &self.help {
            write!(f, "\n{pad} = help: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

/// Diagnostics gathered while checking a workload, each reported once. A composite
/// flowop's body is checked at every call, so one mistake in it was found and printed once
/// per expansion (a composite nested 17 deep gave 131,072 copies of one error, 21 MB).
#[derive(Debug, Default)]
pub struct Collected {
    list: Vec<Diagnostic>,
    seen: std::collections::HashSet<(usize, usize, String)>,
}

impl Collected {
    /// Add `d` unless the same message at the same place is already there.
    pub fn push(&mut self, d: Diagnostic) {
        if self
            .seen
            .insert((d.span.start, d.span.end, d.message.clone()))
        {
            self.list.push(d);
        }
    }

    pub fn extend(&mut self, ds: impl IntoIterator<Item = Diagnostic>) {
        for d in ds {
            self.push(d);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.list.iter()
    }

    /// For amending a diagnostic's help (not its place or message).
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Diagnostic> {
        self.list.iter_mut()
    }

    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.list
    }
}

/// One or more diagnostics, all errors of a workload found before giving up.
#[derive(Debug, Clone)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Diagnostics(vec![d])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_location_and_caret() {
        let src = SourceFile::new("w.f", "set $a = 1\nflowop reed name=x\n");
        let d = Diagnostic::error(&src, Span::new(18, 22), "unknown flowop type `reed`")
            .with_help("did you mean `read`?");
        let s = d.to_string();
        assert!(s.contains("w.f:2:8"), "{s}");
        assert!(s.contains("2 | flowop reed name=x"), "{s}");
        assert!(s.contains("  |        ^^^^\n"), "{s}");
        assert!(s.contains("help: did you mean `read`?"), "{s}");
    }

    #[test]
    fn the_same_diagnostic_is_collected_once() {
        let src = SourceFile::new("w.f", "flowop reed name=x\n");
        let mut c = Collected::default();
        for _ in 0..3 {
            c.push(Diagnostic::error(&src, Span::new(7, 11), "unknown"));
        }
        c.push(Diagnostic::error(&src, Span::new(7, 11), "another"));
        c.push(Diagnostic::error(&src, Span::new(0, 6), "unknown"));
        assert_eq!(c.into_vec().len(), 3);
    }

    #[test]
    fn a_long_line_is_shown_in_part_around_the_column() {
        let mut text = "x".repeat(10_000);
        text.push_str("bad");
        text.push_str(&"y".repeat(10_000));
        let src = SourceFile::new("w.f", text);
        let d = Diagnostic::error(&src, Span::new(10_000, 10_003), "bad");
        let s = d.to_string();
        assert!(s.len() < 600, "{s}");
        let lines: Vec<&str> = s.lines().collect();
        let shown = lines.iter().find(|l| l.starts_with("1 | ")).unwrap();
        let caret = lines.iter().find(|l| l.contains('^')).unwrap();
        let at = caret.chars().position(|c| c == '^').unwrap();
        let under: String = shown.chars().skip(at).take(3).collect();
        assert_eq!(under, "bad", "{s}");
        assert!(shown.starts_with("1 | …") && shown.ends_with('…'), "{s}");
        // The span of a whole long line: the caret stops with what is shown.
        let d = Diagnostic::error(&src, Span::new(0, 20_003), "all");
        assert!(d.to_string().len() < 600);
    }
}
