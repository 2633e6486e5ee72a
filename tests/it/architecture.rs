//! The structure of `src/`, measured from the code: which top-level modules use which (by
//! following `crate::` paths in non-test code), the cycles among them, and how long functions
//! and files are. `cargo test --test it architecture -- --nocapture` prints the figures; the
//! assertions keep what has been reached from slipping back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Source text with comments, string and character literals blanked out (same length and
/// line breaks), so that braces and paths can be found by plain scanning.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if (c == b'r' || c == b'b') && !prev_ident(b, i) && raw_string_start(b, i).is_some()
        {
            let (hashes, body) = raw_string_start(b, i).unwrap();
            while i < body {
                out.push(b' ');
                i += 1;
            }
            loop {
                if i >= b.len() {
                    break;
                }
                if b[i] == b'"'
                    && b[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == b'#')
                        .count()
                        == hashes
                {
                    out.extend(std::iter::repeat_n(b' ', hashes + 1));
                    i += hashes + 1;
                    break;
                }
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if c == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    out.push(b' ');
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if c == b'\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime ('a): only the former
            // closes within a few bytes.
            let close = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .take(10)
                    .position(|&x| x == b'\'')
                    .map(|p| i + 2 + p)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(i + 2)
            } else {
                // A multi-byte UTF-8 character.
                let n = b.get(i + 1).map_or(0, |&x| utf8_len(x));
                (n > 1 && b.get(i + 1 + n) == Some(&b'\'')).then_some(i + 1 + n)
            };
            match close {
                Some(end) => {
                    while i <= end {
                        out.push(b' ');
                        i += 1;
                    }
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

fn prev_ident(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// At `r"`, `r#"`, `br"`, `br#"`: the number of `#` and where the body starts.
fn raw_string_start(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if b[j] == b'b' {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while b.get(j) == Some(&b'#') {
        hashes += 1;
        j += 1;
    }
    (b.get(j) == Some(&b'"')).then_some((hashes, j + 1))
}

/// The code with `#[cfg(test)]` items (a test module, a test function) removed.
fn without_tests(code: &str) -> String {
    let mut out = code.to_string();
    while let Some(at) = out.find("#[cfg(test)]") {
        let after = at + "#[cfg(test)]".len();
        let Some(end) = item_end(&out, after) else {
            out.replace_range(at..after, &" ".repeat(after - at));
            continue;
        };
        let blanked: String = out[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..end, &blanked);
    }
    out
}

/// How many lines the `#[cfg(test)]` items of `code` span.
fn test_lines(code: &str) -> usize {
    let mut n = 0;
    let mut from = 0;
    while let Some(p) = code[from..].find("#[cfg(test)]") {
        let at = from + p;
        let after = at + "#[cfg(test)]".len();
        let end = item_end(code, after).unwrap_or(after);
        n += code[at..end].lines().count();
        from = end;
    }
    n
}

/// The end of the item starting at `from`: after its `;` or its matching `}`.
fn item_end(code: &str, from: usize) -> Option<usize> {
    let b = code.as_bytes();
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b';' => return Some(i + 1),
            b'{' => return matching(b, i).map(|e| e + 1),
            _ => i += 1,
        }
    }
    None
}

/// The index of the `}` matching the `{` at `open`.
fn matching(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The top-level module a file of `src/` belongs to (`main` for the binary).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The top-level modules a piece of code names through `crate::` (or `fsbench::`).
fn uses(code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for root in ["crate::", "fsbench::"] {
        let mut rest = code;
        while let Some(at) = rest.find(root) {
            let before = rest[..at].chars().last();
            rest = &rest[at + root.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest_t = rest.trim_start();
            if let Some(group) = rest_t.strip_prefix('{') {
                // `crate::{a, b::c, d}`: the first name of each element at depth 0.
                let mut depth = 0;
                let mut start = true;
                let mut name = String::new();
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            if !name.is_empty() {
                                out.insert(std::mem::take(&mut name));
                            }
                            start = true
                        }
                        c if start && (c.is_alphanumeric() || c == '_') => name.push(c),
                        c if start && !name.is_empty() && (!c.is_whitespace() || c == ':') => {
                            out.insert(std::mem::take(&mut name));
                            start = false;
                        }
                        _ => {}
                    }
                }
                if !name.is_empty() {
                    out.insert(name);
                }
            } else {
                let name: String = rest_t
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.insert(name);
            }
        }
    }
    out.retain(|m| modules.contains(m));
    out
}

/// A function longer than the limit: file, name, lines.
struct LongFn {
    file: String,
    name: String,
    lines: usize,
}

/// Every function with a body in `code`, with its length in lines (signature to `}`).
fn functions(code: &str, file: &str, out: &mut Vec<LongFn>) {
    let b = code.as_bytes();
    let mut i = 0;
    while let Some(p) = code[i..].find("fn ") {
        let at = i + p;
        i = at + 3;
        if prev_ident(b, at) {
            continue;
        }
        let name: String = code[at + 3..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body opens at the first `{` before any `;` (a declaration has no body), once
        // the parameter list and any generics are closed.
        let mut k = at;
        let mut paren = 0i32;
        let mut open = None;
        while k < b.len() {
            match b[k] {
                b'(' => paren += 1,
                b')' => paren -= 1,
                b';' if paren == 0 => break,
                b'{' if paren == 0 => {
                    open = Some(k);
                    break;
                }
                _ => {}
            }
            k += 1;
        }
        let Some(open) = open else { continue };
        let Some(close) = matching(b, open) else {
            continue;
        };
        let lines = code[at..=close].lines().count();
        out.push(LongFn {
            file: file.to_string(),
            name,
            lines,
        });
    }
}

/// Strongly connected components of more than one module (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on: BTreeSet<String>,
        out: Vec<Vec<String>>,
    }
    fn visit(t: &mut T, v: &str) {
        let n = t.index.len();
        t.index.insert(v.to_string(), n);
        t.low.insert(v.to_string(), n);
        t.stack.push(v.to_string());
        t.on.insert(v.to_string());
        let next: Vec<String> = t.edges.get(v).into_iter().flatten().cloned().collect();
        for w in next {
            if !t.index.contains_key(&w) {
                visit(t, &w);
                let lw = t.low[&w];
                let lv = t.low[v];
                t.low.insert(v.to_string(), lv.min(lw));
            } else if t.on.contains(&w) {
                let iw = t.index[&w];
                let lv = t.low[v];
                t.low.insert(v.to_string(), lv.min(iw));
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(&w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// The measured structure of `src/`.
struct Structure {
    edges: BTreeMap<String, BTreeSet<String>>,
    functions: Vec<LongFn>,
    /// Non-test lines per file.
    file_lines: Vec<(String, usize)>,
}

fn measure() -> Structure {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = rust_files(&src);
    let modules: BTreeSet<String> = files
        .iter()
        .map(|f| module_of(&src, f))
        .filter(|m| m != "lib" && m != "main")
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut functions_all = Vec::new();
    let mut file_lines = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let with_tests = code_only(&text);
        let code = without_tests(&with_tests);
        let m = module_of(&src, f);
        let rel = f.strip_prefix(&src).unwrap().display().to_string();
        // Non-test lines, comments and blank lines included.
        file_lines.push((rel.clone(), text.lines().count() - test_lines(&with_tests)));
        functions(&code, &rel, &mut functions_all);
        if m == "lib" {
            continue;
        }
        let e = edges.entry(m.clone()).or_default();
        for u in uses(&code, &modules) {
            if u != m {
                e.insert(u);
            }
        }
    }
    Structure {
        edges,
        functions: functions_all,
        file_lines,
    }
}

#[test]
fn the_scanner_sees_through_comments_strings_and_tests() {
    let code = code_only("let s = \"fn x() { crate::age }\"; // crate::disk\nlet c = '{';\n");
    assert!(!code.contains("crate::") && !code.contains('{'));
    let code = code_only("let r = r#\"a \" { \"#; let l: &'a str = x; fn f() {}\n");
    assert!(
        code.contains("&'a str") && code.contains("fn f() {}"),
        "{code}"
    );
    let t = without_tests("fn a() {}\n#[cfg(test)]\nmod tests { fn b() { crate::disk::x(); } }\n");
    assert!(!t.contains("crate::disk") && t.contains("fn a"));
    assert_eq!(test_lines("fn a() {}\n#[cfg(test)]\nmod t {\n}\n"), 3);
    let mods: BTreeSet<String> = ["disk", "age", "units"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let u = uses(
        "use crate::{disk::x, age::{a, b}};\nfsbench::units::parse();",
        &mods,
    );
    assert_eq!(u, mods);
    let mut f = Vec::new();
    functions(
        "fn a() {\n  if x { y }\n}\ntrait T { fn d(&self); }\n",
        "x.rs",
        &mut f,
    );
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].name.as_str(), f[0].lines), ("a", 3));
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    g.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(cycles(&g), vec![vec!["a".to_string(), "b".to_string()]]);
}

/// Prints the figures the structure is judged by (`-- --nocapture` shows them), from the
/// test that checks them.
fn print_structure_figures(s: &Structure) {
    let cyc = cycles(&s.edges);
    let over = |n| s.functions.iter().filter(|f| f.lines > n).count();
    let mut long: Vec<&LongFn> = s.functions.iter().collect();
    long.sort_by_key(|f| std::cmp::Reverse(f.lines));
    long.truncate(5);
    let mut files: Vec<&(String, usize)> = s.file_lines.iter().collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.1));
    let total: usize = s.file_lines.iter().map(|f| f.1).sum();
    println!("non-test lines (comments included): {total}");
    println!("uses between top-level modules:");
    for (m, to) in &s.edges {
        let to: Vec<&str> = to.iter().map(|s| s.as_str()).collect();
        println!("  {m} -> {}", to.join(" "));
    }
    println!("cycles among top-level modules: {}", cyc.len());
    for c in &cyc {
        println!("  cycle of {}: {}", c.len(), c.join(", "));
    }
    println!(
        "functions over 100 lines: {}, over 150: {}; the longest:",
        over(100),
        over(150)
    );
    for f in &long {
        println!("  {:4} {}::{}", f.lines, f.file, f.name);
    }
    println!("files over 1,200 non-test lines:");
    for (f, n) in files.iter().take_while(|f| f.1 > 1200) {
        println!("  {n:5} {f}");
    }
}

/// The layers written in `src/lib.rs`: module → layer index (0 = top). `main` is a command.
fn layers() -> BTreeMap<String, (usize, String)> {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let mut out = BTreeMap::new();
    let mut layer: Option<(usize, String)> = None;
    let mut n = 0;
    for line in lib.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("// layer ") {
            let name = rest.split(':').next().unwrap().trim().to_string();
            layer = Some((n, name));
            n += 1;
        } else if let Some(m) = line
            .strip_prefix("pub mod ")
            .and_then(|r| r.strip_suffix(';'))
        {
            let l = layer
                .clone()
                .expect("a `// layer` line before the first module");
            out.insert(m.to_string(), l);
        }
    }
    out.insert("main".into(), (0, "commands".into()));
    out
}

#[test]
fn every_module_stands_in_a_layer_and_uses_none_above_it() {
    let s = measure();
    let layers = layers();
    let mut wrong = Vec::new();
    for (m, to) in &s.edges {
        let Some((lm, nm)) = layers.get(m) else {
            wrong.push(format!("{m} is in no layer of src/lib.rs"));
            continue;
        };
        for t in to {
            if let Some((lt, nt)) = layers.get(t) {
                if lt < lm {
                    wrong.push(format!(
                        "{m} ({nm}) uses {t}, a module of the {nt} layer above it"
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let cyc = cycles(&s.edges);
    assert!(cyc.is_empty(), "modules that use each other: {cyc:?}");
}

/// Long functions and files: the counts may only go down (lower the limits as they do).
#[test]
fn functions_and_files_do_not_grow_longer() {
    let s = measure();
    print_structure_figures(&s);
    let over = |n| s.functions.iter().filter(|f| f.lines > n).count();
    assert!(over(100) == 0, "{} functions over 100 lines", over(100));
    assert!(over(150) == 0, "{} functions over 150 lines", over(150));
    let big = s.file_lines.iter().filter(|f| f.1 > 1200).count();
    assert!(big == 0, "{big} files over 1,200 non-test lines");
}
