//! The lexer of the workload language.
//!
//! Filebench's lexer (flex) knows words, integers with `k`/`m`/`g` suffixes, quoted strings,
//! `$variables` and a little punctuation; newlines are plain white space, so a statement ends
//! where the next keyword begins and attribute lists continue across lines after a comma.
//! We lex the same language, but more strictly about numbers: `12x` is an error here, where
//! Filebench would silently split it.

use super::diag::Diagnostic;
use super::source::{SourceFile, Span};
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// An unquoted word: keywords, names and paths (`[/A-Za-z_-][/A-Za-z0-9._:;-]*`).
    Word(String),
    /// An integer, suffixes already applied.
    Int(i64),
    /// A `"quoted"` string, contents verbatim (variables are interpolated later).
    Quoted(String),
    /// A variable reference: `$name`, `${name}` or `$(name)`; holds the bare name.
    Var(String),
    Eq,
    Comma,
    LBrace,
    RBrace,
    LParen,
    RParen,
    Star,
    Eof,
}

impl Tok {
    pub fn describe(&self) -> String {
        match self {
            Tok::Word(w) => format!("`{w}`"),
            Tok::Int(i) => format!("number `{i}`"),
            Tok::Quoted(_) => "a quoted string".into(),
            Tok::Var(v) => format!("variable `${v}`"),
            Tok::Eq => "`=`".into(),
            Tok::Comma => "`,`".into(),
            Tok::LBrace => "`{`".into(),
            Tok::RBrace => "`}`".into(),
            Tok::LParen => "`(`".into(),
            Tok::RParen => "`)`".into(),
            Tok::Star => "`*`".into(),
            Tok::Eof => "end of file".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

fn word_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'/' || c == b'_' || c == b'-'
}

fn word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'/' | b'_' | b'-' | b'.' | b':' | b';')
}

/// Parse an integer literal with an optional size suffix (`k`, `m`, `g`, `t`: powers of 1024).
pub fn parse_int(text: &str) -> Option<i64> {
    let (digits, mult) = match text.as_bytes().last()? {
        b'k' | b'K' => (&text[..text.len() - 1], 1i64 << 10),
        b'm' | b'M' => (&text[..text.len() - 1], 1i64 << 20),
        b'g' | b'G' => (&text[..text.len() - 1], 1i64 << 30),
        b't' | b'T' => (&text[..text.len() - 1], 1i64 << 40),
        _ => (text, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<i64>().ok()?.checked_mul(mult)
}

/// Split a whole workload into tokens, ending with `Tok::Eof`.
pub fn lex(src: &Arc<SourceFile>) -> Result<Vec<Token>, Diagnostic> {
    let b = src.text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if let Some(tok) = punct(c) {
            out.push(Token {
                tok,
                span: Span::new(start, start + 1),
            });
            i += 1;
            continue;
        }
        let token = match c {
            b' ' | b'\t' | b'\r' | b'\n' => {
                i += 1;
                continue;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' => quoted(src, start)?,
            b'$' => variable(src, start)?,
            b'0'..=b'9' => number(src, start)?,
            b'-' if b.get(i + 1).is_some_and(|d| d.is_ascii_digit()) => negative(src, start)?,
            c if word_start(c) => {
                while i < b.len() && word_char(b[i]) {
                    i += 1;
                }
                Token {
                    tok: Tok::Word(src.text[start..i].to_string()),
                    span: Span::new(start, i),
                }
            }
            _ => {
                let ch = src.text[i..].chars().next().unwrap_or('?');
                return Err(Diagnostic::error(
                    src,
                    Span::new(start, start + ch.len_utf8()),
                    format!("unexpected character `{ch}`"),
                ));
            }
        };
        i = token.span.end;
        out.push(token);
    }
    out.push(Token {
        tok: Tok::Eof,
        span: Span::new(b.len(), b.len()),
    });
    Ok(out)
}

/// The one-character tokens.
fn punct(c: u8) -> Option<Tok> {
    Some(match c {
        b'=' => Tok::Eq,
        b',' => Tok::Comma,
        b'{' => Tok::LBrace,
        b'}' => Tok::RBrace,
        b'(' => Tok::LParen,
        b')' => Tok::RParen,
        b'*' => Tok::Star,
        _ => return None,
    })
}

/// A quoted string starting at `start` (its `"`).
fn quoted(src: &Arc<SourceFile>, start: usize) -> Result<Token, Diagnostic> {
    let b = src.text.as_bytes();
    let mut i = start + 1;
    while i < b.len() && b[i] != b'"' {
        i += 1;
    }
    if i >= b.len() {
        return Err(Diagnostic::error(
            src,
            Span::new(start, start + 1),
            "unterminated quoted string",
        )
        .with_help("add the closing `\"`"));
    }
    i += 1;
    Ok(Token {
        tok: Tok::Quoted(src.text[start + 1..i - 1].to_string()),
        span: Span::new(start, i),
    })
}

/// A variable reference starting at `start` (its `$`): `$name`, `${name}` or `$(name)`.
fn variable(src: &Arc<SourceFile>, start: usize) -> Result<Token, Diagnostic> {
    let b = src.text.as_bytes();
    let mut i = start + 1;
    let close = match b.get(i) {
        Some(b'{') => Some(b'}'),
        Some(b'(') => Some(b')'),
        _ => None,
    };
    if close.is_some() {
        i += 1;
    }
    let name_start = i;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    let name = &src.text[name_start..i];
    if name.is_empty() || !(name.as_bytes()[0].is_ascii_alphabetic()) {
        return Err(Diagnostic::error(
            src,
            Span::new(start, i.max(start + 1)),
            "expected a variable name after `$`",
        )
        .with_help("variable names start with a letter, e.g. `$nfiles`"));
    }
    if let Some(cl) = close {
        if b.get(i) != Some(&cl) {
            return Err(Diagnostic::error(
                src,
                Span::new(start, i),
                format!("unclosed variable reference, expected `{}`", cl as char),
            ));
        }
        i += 1;
    }
    Ok(Token {
        tok: Tok::Var(name.to_string()),
        span: Span::new(start, i),
    })
}

/// A whole number starting at `start`, with an optional k, m or g suffix.
fn number(src: &Arc<SourceFile>, start: usize) -> Result<Token, Diagnostic> {
    let b = src.text.as_bytes();
    let mut i = start;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
        i += 1;
    }
    let text = &src.text[start..i];
    match parse_int(text) {
        Some(v) => Ok(Token {
            tok: Tok::Int(v),
            span: Span::new(start, i),
        }),
        None => Err(
            Diagnostic::error(src, Span::new(start, i), format!("bad number `{text}`")).with_help(
                "numbers are whole and may end in k, m or g (powers of 1024); \
                 there are no fractions: gamma values are written x1000, e.g. 1500 for 1.5",
            ),
        ),
    }
}

/// A negative whole number starting at `start` (its `-`).
fn negative(src: &Arc<SourceFile>, start: usize) -> Result<Token, Diagnostic> {
    let b = src.text.as_bytes();
    let mut i = start + 1;
    while i < b.len() && b[i].is_ascii_alphanumeric() {
        i += 1;
    }
    match parse_int(&src.text[start + 1..i]) {
        Some(v) => Ok(Token {
            tok: Tok::Int(-v),
            span: Span::new(start, i),
        }),
        None => Err(Diagnostic::error(
            src,
            Span::new(start, i),
            format!("bad number `{}`", &src.text[start..i]),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(&SourceFile::new("t", s))
            .unwrap()
            .into_iter()
            .map(|t| t.tok)
            .collect()
    }

    #[test]
    fn tokens() {
        assert_eq!(
            toks("set $nfiles = 10k # comment\ndefine fileset name=a,path=/tmp/x"),
            vec![
                Tok::Word("set".into()),
                Tok::Var("nfiles".into()),
                Tok::Eq,
                Tok::Int(10240),
                Tok::Word("define".into()),
                Tok::Word("fileset".into()),
                Tok::Word("name".into()),
                Tok::Eq,
                Tok::Word("a".into()),
                Tok::Comma,
                Tok::Word("path".into()),
                Tok::Eq,
                Tok::Word("/tmp/x".into()),
                Tok::Eof
            ]
        );
        assert_eq!(
            toks("${a1} $(bb) \"x $y\" -5 1g parameters=mean:1;gamma:1.5"),
            vec![
                Tok::Var("a1".into()),
                Tok::Var("bb".into()),
                Tok::Quoted("x $y".into()),
                Tok::Int(-5),
                Tok::Int(1 << 30),
                Tok::Word("parameters".into()),
                Tok::Eq,
                Tok::Word("mean:1;gamma:1.5".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn errors_have_positions() {
        let src = SourceFile::new("t", "set $a = 12x");
        let e = lex(&src).unwrap_err();
        assert_eq!(e.line_col(), (1, 10));
        assert!(e.message.contains("bad number"));
        let e = lex(&SourceFile::new("t", "echo \"abc")).unwrap_err();
        assert_eq!(e.line_col(), (1, 6));
        let e = lex(&SourceFile::new("t", "\n  $ x")).unwrap_err();
        assert_eq!(e.line_col(), (2, 3));
        let e = lex(&SourceFile::new("t", "a @")).unwrap_err();
        assert_eq!(e.line_col(), (1, 3));
    }
}
