//! The structure of the workspace's crates, measured from the code: what Cargo cannot check.
//! Cargo keeps the layers (a crate depends only on crates below it); this test keeps, inside
//! each crate, modules from using each other at any level (two sibling modules, files or
//! folders, that name each other through `crate::`, `super::` or `self::` paths, directly or in
//! a loop), and functions and files from growing long, and bans the shortcuts that hide
//! structure (`#[allow(clippy::too_many_arguments)]`, `use super::*` outside tests, a `pub use`
//! that gives an item a second public name). `cargo test --test it architecture --
//! --nocapture` prints the figures.

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

/// The module path of a file of a crate's `src/` (`a/b.rs` and `a/b/mod.rs` are `a::b`; the
/// crate root is the empty path).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !["mod", "lib", "main"].contains(&stem) {
        parts.push(stem.to_string());
    }
    parts
}

/// The module paths a piece of code names, resolved from the module `at`: `crate::a::b`,
/// `super::x` (any number of `super::`), `self::x`, and each element of a `{...}` group after
/// such a prefix. Paths are returned in full; the caller keeps the part that names modules.
fn paths_used(code: &str, at: &[String]) -> Vec<Vec<String>> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = |w: &str| code[i..].starts_with(w) && (i == 0 || !ident_byte(b[i - 1]));
        let (mut base, mut k) = if starts("crate::") {
            (Vec::new(), i + 7)
        } else if starts("self::") {
            (at.to_vec(), i + 6)
        } else if starts("super::") {
            let mut base = at.to_vec();
            let mut k = i;
            while code[k..].starts_with("super::") {
                base.pop();
                k += 7;
            }
            (base, k)
        } else {
            i += 1;
            continue;
        };
        loop {
            let name: String = code[k..].chars().take_while(|c| ident_char(*c)).collect();
            if name.is_empty() {
                if code[k..].starts_with('{') {
                    for element in group_elements(&code[k + 1..]) {
                        let mut p = base.clone();
                        p.extend(element);
                        out.push(p);
                    }
                }
                break;
            }
            k += name.len();
            base.push(name);
            if !code[k..].starts_with("::") {
                break;
            }
            k += 2;
        }
        out.push(base);
        i = k.max(i + 1);
    }
    out
}

fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

/// The leading path of each element of a `use` group (`a::b, c::{d, e}, f` → `a::b`, `c`,
/// `f`), up to its closing brace.
fn group_elements(group: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => out.push(std::mem::take(&mut current)),
            c if depth == 0 => current.push(c),
            _ => {}
        }
    }
    out.push(current);
    out.iter()
        .map(|e| {
            e.split("::")
                .map(|s| s.trim().to_string())
                .take_while(|s| !s.is_empty() && s.chars().all(ident_char))
                .collect::<Vec<_>>()
        })
        .filter(|p| !p.is_empty() && p[0] != "self")
        .collect()
}

/// The edge a use from module `from` to path `to` makes between two sibling modules (their
/// paths, under the deepest module both lie in), if it makes one: none for a use of an
/// ancestor, of a descendant, or of the module itself.
fn sibling_edge(
    from: &[String],
    to: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Option<(Vec<String>, Vec<String>)> {
    let mut to = to.to_vec();
    while !to.is_empty() && !modules.contains(&to) {
        to.pop();
    }
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    if common == from.len() || common == to.len() {
        return None;
    }
    Some((from[..=common].to_vec(), to[..=common].to_vec()))
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

/// The measured structure of the workspace.
struct Structure {
    /// Uses between sibling modules, as `crate:a::b` names.
    edges: BTreeMap<String, BTreeSet<String>>,
    functions: Vec<LongFn>,
    /// Non-test lines per file.
    file_lines: Vec<(String, usize)>,
    /// Shortcuts that hide structure, each `file: what`.
    shortcuts: Vec<String>,
}

/// Each crate of the workspace: its name and its `src/` directory.
fn crates() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![("fsbench".to_string(), root.join("src"))];
    for e in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        out.push((format!("fsbench-{name}"), e.path().join("src")));
    }
    out.sort();
    out
}

fn measure() -> Structure {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut s = Structure {
        edges: BTreeMap::new(),
        functions: Vec::new(),
        file_lines: Vec::new(),
        shortcuts: Vec::new(),
    };
    for (krate, src) in crates() {
        let files = rust_files(&src);
        let mut modules = BTreeSet::new();
        for f in &files {
            let mut m = module_path(&src, f);
            while !m.is_empty() {
                modules.insert(m.clone());
                m.pop();
            }
        }
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            let with_tests = code_only(&text);
            let code = without_tests(&with_tests);
            let rel = f.strip_prefix(root).unwrap().display().to_string();
            // Non-test lines, comments and blank lines included.
            s.file_lines
                .push((rel.clone(), text.lines().count() - test_lines(&with_tests)));
            functions(&code, &rel, &mut s.functions);
            shortcuts(&code, &rel, f, &mut s.shortcuts);
            if f.ends_with("main.rs") {
                continue;
            }
            let at = module_path(&src, f);
            for to in paths_used(&code, &at) {
                if let Some((a, b)) = sibling_edge(&at, &to, &modules) {
                    let name = |p: &[String]| format!("{krate}:{}", p.join("::"));
                    s.edges.entry(name(&a)).or_default().insert(name(&b));
                }
            }
        }
    }
    s
}

/// `#[allow(clippy::too_many_arguments)]`, `use super::*` outside tests, and a `pub use` of
/// an item of a public module (the item then has two public names; a private module's items
/// re-exported by its parent have one).
fn shortcuts(code: &str, rel: &str, file: &Path, out: &mut Vec<String>) {
    if code.contains("too_many_arguments") {
        out.push(format!("{rel}: allows too_many_arguments"));
    }
    if code.contains("use super::*") && !rel.ends_with("tests.rs") {
        out.push(format!("{rel}: use super::*"));
    }
    let dir = file.parent().unwrap();
    for line in code.lines().map(str::trim) {
        let Some(path) = line.strip_prefix("pub use ") else {
            continue;
        };
        let path = path.trim_start_matches("self::");
        let (module, declared_in) = match path.strip_prefix("super::") {
            Some(p) => (p, dir.join("mod.rs")),
            None => (path, file.to_path_buf()),
        };
        let module: String = module.chars().take_while(|c| ident_char(*c)).collect();
        let declaring = std::fs::read_to_string(&declared_in).unwrap_or_default();
        if declaring
            .lines()
            .any(|l| l.trim() == format!("pub mod {module};"))
        {
            out.push(format!(
                "{rel}: `pub use {path}` re-exports from public `{module}`"
            ));
        }
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
    let at = vec!["engine".to_string(), "worker".to_string()];
    let used = paths_used(
        "use crate::{disk::x, age::{a, b}};\nsuper::rundir::make(); self::plain::go();",
        &at,
    );
    let p = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    for want in [
        "disk::x",
        "age",
        "engine::rundir::make",
        "engine::worker::plain::go",
    ] {
        assert!(used.contains(&p(want)), "{want} not in {used:?}");
    }
    let modules: BTreeSet<Vec<String>> = ["engine", "engine::worker", "engine::rundir", "disk"]
        .iter()
        .map(|m| p(m))
        .collect();
    assert_eq!(
        sibling_edge(&p("engine::worker"), &p("engine::rundir::make"), &modules),
        Some((p("engine::worker"), p("engine::rundir")))
    );
    assert_eq!(
        sibling_edge(&p("engine::worker"), &p("engine::X"), &modules),
        None
    );
    assert_eq!(
        sibling_edge(&p("engine"), &p("engine::worker::Y"), &modules),
        None
    );
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
    println!("uses between sibling modules:");
    for (m, to) in &s.edges {
        let to: Vec<&str> = to.iter().map(|s| s.as_str()).collect();
        println!("  {m} -> {}", to.join(" "));
    }
    println!("cycles among sibling modules: {}", cyc.len());
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

/// No two modules use each other, at any level of any crate; no shortcut hides structure.
#[test]
fn no_modules_use_each_other_and_no_shortcuts() {
    let s = measure();
    let cyc = cycles(&s.edges);
    let shown: Vec<String> = cyc.iter().map(|c| c.join(" <-> ")).collect();
    assert!(
        cyc.is_empty(),
        "modules that use each other:\n{}",
        shown.join("\n")
    );
    assert!(s.shortcuts.is_empty(), "{}", s.shortcuts.join("\n"));
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
