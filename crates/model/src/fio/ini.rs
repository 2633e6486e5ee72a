//! fio's job file format, read as fio's `__parse_jobs_ini` reads it: `[section]` headers
//! (`[global]`, or any name starting with `global`, holds defaults for the jobs after it),
//! one `option` or `option=value` a line, `include FILE` inside a section (relative to the
//! including file when not found from the current directory; an included file holds
//! options only), and comments: a line whose first non-blank character is `;` or `#`, and
//! everything from the first `;` or `#` of a line on.
//!
//! Each option line is expanded before it is read, as in fio: `${NAME}` is the environment
//! variable's value (empty when unset), and `$ncpus`, `$pagesize` and `$mb_memory` the
//! machine's; a value in which one of those was replaced and that holds `+ - * /` is
//! computed (fio hands it to `bc`).

use crate::lang::{Diagnostic, Diagnostics, SourceFile, Span};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One option line: its name, its value (none for a bare `option`), and where it is.
#[derive(Debug, Clone)]
pub struct Opt {
    pub key: String,
    pub value: Option<String>,
    pub src: Arc<SourceFile>,
    pub key_span: Span,
    pub val_span: Span,
}

impl Opt {
    /// An error about this option's value.
    pub fn value_error(&self, msg: impl Into<String>) -> Diagnostic {
        let span = if self.value.is_some() {
            self.val_span
        } else {
            self.key_span
        };
        Diagnostic::error(&self.src, span, msg)
    }

    /// An error about this option as a whole (refused, or in conflict).
    pub fn error(&self, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(&self.src, self.key_span, msg)
    }
}

/// A `[name]` section and its options, in order, includes expanded.
#[derive(Debug, Clone)]
pub struct Section {
    pub name: String,
    pub src: Arc<SourceFile>,
    pub span: Span,
    pub opts: Vec<Opt>,
}

impl Section {
    /// `[global]`: fio takes every section whose name starts with `global` as one.
    pub fn is_global(&self) -> bool {
        self.name.starts_with("global")
    }
}

/// The values of fio's `$` keywords on this machine.
#[derive(Debug, Clone)]
pub struct Keywords {
    pub ncpus: u64,
    pub pagesize: u64,
    pub mb_memory: u64,
}

impl Keywords {
    /// This machine's: configured CPUs, page size, physical memory in MiB (as fio's
    /// `cpus_configured`, `page_size` and `os_phys_mem`).
    pub fn of_host() -> Keywords {
        // SAFETY: sysconf reads system constants.
        let (cpus, page, pages) = unsafe {
            (
                libc::sysconf(libc::_SC_NPROCESSORS_CONF),
                libc::sysconf(libc::_SC_PAGESIZE),
                libc::sysconf(libc::_SC_PHYS_PAGES),
            )
        };
        let page = page.max(1) as u64;
        Keywords {
            ncpus: cpus.max(1) as u64,
            pagesize: page,
            mb_memory: (pages.max(0) as u64).saturating_mul(page) >> 20,
        }
    }
}

/// How option lines are expanded: the keywords and the environment.
pub struct Expand<'a> {
    pub keywords: Keywords,
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// Includes nest at most this deep (a file including itself is an error, not a hang).
const MAX_INCLUDE_DEPTH: usize = 16;

/// fio's `strip_blank_end`: cut at the first `;` or `#`, then trailing blanks. Returns
/// the byte range of what is left within `line`, leading blanks skipped too.
fn content(line: &str) -> (usize, usize) {
    let cut = line.find([';', '#']).unwrap_or(line.len());
    let kept = &line[..cut];
    let end = kept
        .trim_end_matches(|c: char| c.is_whitespace() || c.is_control())
        .len();
    let start = kept.len() - kept.trim_start().len();
    (start.min(end), end)
}

struct Reader<'a> {
    x: &'a Expand<'a>,
    sections: Vec<Section>,
    errors: Vec<Diagnostic>,
}

/// Read a job file (and what it includes) into its sections.
pub fn parse(src: &Arc<SourceFile>, x: &Expand) -> Result<Vec<Section>, Diagnostics> {
    let mut r = Reader {
        x,
        sections: Vec::new(),
        errors: Vec::new(),
    };
    r.file(src, 0);
    if r.errors.is_empty() {
        Ok(r.sections)
    } else {
        Err(Diagnostics(r.errors))
    }
}

impl Reader<'_> {
    /// Read the lines of `src`; `depth` > 0 for an included file (options only).
    fn file(&mut self, src: &Arc<SourceFile>, depth: usize) {
        let mut at = 0;
        for raw in src.text.split_inclusive('\n') {
            let line_start = at;
            at += raw.len();
            let line = raw.trim_end_matches(['\n', '\r']);
            let (s, e) = content(line);
            if s >= e {
                continue;
            }
            let text = &line[s..e];
            let span = Span::new(line_start + s, line_start + e);
            if text.starts_with('[') {
                self.header(src, text, span, depth);
            } else if let Some(rest) = include_target(text) {
                let off = line_start + s + (text.len() - rest.len());
                self.include(src, rest, Span::new(off, span.end), depth);
            } else {
                self.option(src, text, span);
            }
        }
    }

    fn header(&mut self, src: &Arc<SourceFile>, text: &str, span: Span, depth: usize) {
        if depth > 0 {
            self.errors.push(Diagnostic::error(
                src,
                span,
                "a section header in an included file (fio: no new sections in included files)",
            ));
            return;
        }
        let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) else {
            self.errors.push(
                Diagnostic::error(src, span, "a section header without its closing `]`")
                    .with_help("a section is `[name]` alone on its line"),
            );
            return;
        };
        if inner.trim().is_empty() {
            self.errors
                .push(Diagnostic::error(src, span, "a section with an empty name"));
            return;
        }
        self.sections.push(Section {
            name: inner.to_string(),
            src: src.clone(),
            span,
            opts: Vec::new(),
        });
    }

    fn include(&mut self, src: &Arc<SourceFile>, name: &str, span: Span, depth: usize) {
        if self.sections.is_empty() {
            self.errors.push(Diagnostic::error(
                src,
                span,
                "`include` outside of a [] job section",
            ));
            return;
        }
        if depth >= MAX_INCLUDE_DEPTH {
            self.errors.push(Diagnostic::error(
                src,
                span,
                format!("includes nested more than {MAX_INCLUDE_DEPTH} deep (does a file include itself?)"),
            ));
            return;
        }
        let path = resolve_include(name, &src.name);
        let bytes = fsbench_base::input::read(&path, fsbench_base::input::INCLUDE);
        let text = match bytes.map(String::from_utf8) {
            Ok(Ok(t)) => t,
            Ok(Err(_)) => {
                self.errors.push(Diagnostic::error(
                    src,
                    span,
                    format!("include file {} is not UTF-8 text", path.display()),
                ));
                return;
            }
            Err(e) => {
                self.errors.push(Diagnostic::error(
                    src,
                    span,
                    format!("cannot read include file {}: {e}", path.display()),
                ));
                return;
            }
        };
        let inc = SourceFile::new(path.display().to_string(), text);
        self.file(&inc, depth + 1);
    }

    fn option(&mut self, src: &Arc<SourceFile>, text: &str, span: Span) {
        if self.sections.is_empty() {
            self.errors.push(Diagnostic::error(
                src,
                span,
                format!("option `{text}` outside of a [] job section"),
            ));
            return;
        }
        let expanded = match expand(text, self.x) {
            Ok(t) => t,
            Err(msg) => {
                self.errors.push(Diagnostic::error(src, span, msg));
                return;
            }
        };
        // Where the key and the value are in the text as written (before expansion).
        let (key_span, val_span) = match text.find('=') {
            Some(i) => {
                let k = text[..i].trim_end().len();
                let v0 = i + 1 + (text[i + 1..].len() - text[i + 1..].trim_start().len());
                (
                    Span::new(span.start, span.start + k),
                    Span::new(span.start + v0.min(text.len()), span.end),
                )
            }
            None => (span, span),
        };
        let (key, value) = match expanded.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
            None => (expanded.trim().to_string(), None),
        };
        if key.is_empty() {
            self.errors
                .push(Diagnostic::error(src, span, "an option without a name"));
            return;
        }
        let sec = self.sections.last_mut().expect("checked above");
        sec.opts.push(Opt {
            key,
            value,
            src: src.clone(),
            key_span,
            val_span,
        });
    }
}

/// `include FILE` (fio compares the first seven characters; fsbench also wants the blank
/// after them, so an option named `includes...` is not taken for one).
fn include_target(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("include")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let t = rest.trim();
    (!t.is_empty()).then_some(t)
}

/// An include's path: as given when it exists from the current directory, else beside the
/// including file (fio's rule).
fn resolve_include(name: &str, including: &str) -> PathBuf {
    let p = Path::new(name);
    if p.exists() || p.is_absolute() {
        return p.to_path_buf();
    }
    match Path::new(including).parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(p),
        _ => p.to_path_buf(),
    }
}

/// Expand `${ENV}` (unset: empty), then fio's `$` keywords; compute a value with math
/// when a keyword was replaced.
pub fn expand(text: &str, x: &Expand) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        match rest[i + 2..].find('}') {
            Some(j) if j > 0 => {
                out.push_str(&rest[..i]);
                let name = &rest[i + 2..i + 2 + j];
                if let Some(v) = (x.env)(name) {
                    out.push_str(&v);
                }
                rest = &rest[i + 3 + j..];
            }
            _ => {
                out.push_str(&rest[..i + 2]);
                rest = &rest[i + 2..];
            }
        }
    }
    out.push_str(rest);
    let k = &x.keywords;
    let mut replaced = false;
    for (word, v) in [
        ("$pagesize", k.pagesize),
        ("$mb_memory", k.mb_memory),
        ("$ncpus", k.ncpus),
    ] {
        if out.contains(word) {
            out = out.replace(word, &v.to_string());
            replaced = true;
        }
    }
    if replaced && super::expr::has_math(&out) && !out.contains('\'') {
        if let Some((key, val)) = out.split_once('=') {
            let v = super::expr::eval(val.trim())?;
            out = format!("{key}={v}");
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(n: &str) -> Option<String> {
        match n {
            "SIZE" => Some("64k".into()),
            "DIR" => Some("/x".into()),
            _ => None,
        }
    }

    fn x() -> Expand<'static> {
        Expand {
            keywords: Keywords {
                ncpus: 4,
                pagesize: 4096,
                mb_memory: 1000,
            },
            env: &env,
        }
    }

    fn read(text: &str) -> Result<Vec<Section>, Diagnostics> {
        parse(&SourceFile::new("t.fio", text), &x())
    }

    #[test]
    fn sections_options_and_comments() {
        let s = read(
            "; a comment\n# another\n[global]\nbs=4k ; trailing\n  direct = 1\n\n[job1]\nrw=randread#x\ntime_based\n",
        )
        .unwrap();
        assert_eq!(s.len(), 2);
        assert!(s[0].is_global());
        assert_eq!(s[0].opts[0].key, "bs");
        assert_eq!(s[0].opts[0].value.as_deref(), Some("4k"));
        assert_eq!(s[0].opts[1].key, "direct");
        assert_eq!(s[0].opts[1].value.as_deref(), Some("1"));
        assert_eq!(s[1].name, "job1");
        assert_eq!(s[1].opts[0].value.as_deref(), Some("randread"));
        assert_eq!(s[1].opts[1].key, "time_based");
        assert_eq!(s[1].opts[1].value, None);
        // Where the value is: line 4, column 4.
        let o = &s[0].opts[0];
        assert_eq!(o.src.line_col(o.val_span.start), (4, 4));
        assert_eq!(o.src.line_col(s[0].opts[1].val_span.start), (5, 12));
    }

    #[test]
    fn globals_are_any_section_starting_with_global() {
        let s = read("[globalx]\nbs=1\n").unwrap();
        assert!(s[0].is_global());
    }

    #[test]
    fn expansion_of_environment_and_keywords() {
        assert_eq!(expand("size=${SIZE}", &x()).unwrap(), "size=64k");
        assert_eq!(expand("size=${NOPE}k", &x()).unwrap(), "size=k");
        assert_eq!(expand("numjobs=$ncpus", &x()).unwrap(), "numjobs=4");
        assert_eq!(expand("numjobs=$ncpus*2", &x()).unwrap(), "numjobs=8");
        assert_eq!(expand("bs=$pagesize", &x()).unwrap(), "bs=4096");
        assert_eq!(expand("size=$mb_memory/2", &x()).unwrap(), "size=500");
        // No keyword: no arithmetic (bsrange keeps its `-`).
        assert_eq!(expand("bsrange=1k-4k", &x()).unwrap(), "bsrange=1k-4k");
        assert!(expand("size=$ncpus*x", &x()).is_err());
        // `$` without braces and not a keyword stays.
        assert_eq!(expand("filename=a$b", &x()).unwrap(), "filename=a$b");
    }

    #[test]
    fn malformed_lines_name_line_and_column() {
        let e = read("bs=4k\n").unwrap_err();
        assert_eq!(e.0[0].location(), "t.fio:1:1");
        assert!(e.0[0].message.contains("outside of a [] job section"));
        let e = read("[job\n").unwrap_err();
        assert_eq!(e.0[0].location(), "t.fio:1:1");
        assert!(e.0[0].message.contains("closing `]`"));
        let e = read("[j]\n  =4k\n").unwrap_err();
        assert_eq!(e.0[0].location(), "t.fio:2:3");
        let e = read("include x.fio\n").unwrap_err();
        assert!(e.0[0].message.contains("outside of a [] job section"));
    }

    #[test]
    fn includes_read_beside_the_including_file() {
        let dir = std::env::temp_dir().join(format!("fsbench-fio-ini-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        struct D(std::path::PathBuf);
        impl D {
            fn path(&self) -> &std::path::Path {
                &self.0
            }
        }
        impl Drop for D {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        let d = D(dir);
        std::fs::write(d.path().join("common.fio"), "bs=8k\nioengine=psync\n").unwrap();
        std::fs::write(d.path().join("bad.fio"), "[x]\n").unwrap();
        let main = d.path().join("main.fio");
        let text = "[job]\ninclude common.fio\nrw=read\n";
        let s = parse(&SourceFile::new(main.display().to_string(), text), &x()).unwrap();
        let keys: Vec<&str> = s[0].opts.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["bs", "ioengine", "rw"]);
        assert!(s[0].opts[0].src.name.ends_with("common.fio"));
        let text = "[job]\ninclude bad.fio\n";
        let e = parse(&SourceFile::new(main.display().to_string(), text), &x()).unwrap_err();
        assert!(
            e.0[0].location().ends_with("bad.fio:1:1"),
            "{}",
            e.0[0].location()
        );
        let text = "[job]\ninclude missing.fio\n";
        let e = parse(&SourceFile::new(main.display().to_string(), text), &x()).unwrap_err();
        assert!(e.0[0].message.contains("cannot read include file"));
        assert!(
            e.0[0].location().ends_with("main.fio:2:9"),
            "{}",
            e.0[0].location()
        );
        std::fs::write(d.path().join("self.fio"), "include self.fio\n").unwrap();
        let text = "[job]\ninclude self.fio\n";
        let e = parse(&SourceFile::new(main.display().to_string(), text), &x()).unwrap_err();
        assert!(e.0[0].message.contains("nested"));
    }
}
