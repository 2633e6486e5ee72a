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
        writeln!(f, "{num} | {}", text.replace('\t', " "))?;
        // Caret width: the span's characters on this line, at least one.
        let (eline, ecol) = self.source.line_col(self.span.end.max(self.span.start));
        let width = if eline == line && ecol > col {
            ecol - col
        } else {
            1
        };
        write!(
            f,
            "{pad} | {}{}",
            " ".repeat(col - 1),
            "^".repeat(width.max(1))
        )?;
        if let Some(help) = &self.help {
            write!(f, "\n{pad} = help: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

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
}
