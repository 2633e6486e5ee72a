//! The parser and model builder never panic: random bytes, and built-in workloads mutated by
//! deleting, duplicating, swapping and inserting tokens and characters.

use fsbench_model::lang::{parse, SourceFile};
use fsbench_model::model::build::{build, Overrides};
use fsbench_model::workloads::BUILTINS;
use rand::{Rng, SeedableRng};

fn check(text: &str) {
    let src = SourceFile::new("fuzz.f", text);
    let r = std::panic::catch_unwind(|| {
        if let Ok(script) = parse(&src) {
            if let Ok(w) = build("fuzz", &src, &script, &Overrides::default()) {
                let _ = fsbench_model::model::explain::explain(&w);
            } else if let Err(d) = build("fuzz", &src, &script, &Overrides::default()) {
                // Rendering must not panic either.
                let _ = d.to_string();
            }
        } else if let Err(d) = parse(&src) {
            let _ = d.to_string();
        }
    });
    if r.is_err() {
        panic!("panicked on input:\n{text}");
    }
}

const PIECES: &[&str] = &[
    "$",
    "${",
    "$(",
    "=",
    ",",
    "{",
    "}",
    "(",
    ")",
    "*",
    "\"",
    "#",
    "\n",
    "-",
    "0",
    "99999999999999999999",
    "1k",
    "randvar(",
    "cvar(",
    "define",
    "flowop",
    "thread",
    "process",
    "fileset",
    "set",
    "run",
    "randtable={{",
    "é",
    "\t",
    "name=",
    "fd=",
    "$nfiles",
];

#[test]
fn parser_never_panics() {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0x0F5B_E4C4);
    for i in 0..3000 {
        let text = if i % 10 == 0 {
            let n = rng.random_range(0..200);
            (0..n)
                .map(|_| PIECES[rng.random_range(0..PIECES.len())])
                .collect::<String>()
        } else {
            let base = BUILTINS[rng.random_range(0..BUILTINS.len())].1;
            let mut chars: Vec<char> = base.chars().collect();
            for _ in 0..rng.random_range(1..6) {
                if chars.is_empty() {
                    break;
                }
                let at = rng.random_range(0..chars.len());
                match rng.random_range(0..4) {
                    0 => {
                        let end = (at + rng.random_range(1..20)).min(chars.len());
                        chars.drain(at..end);
                    }
                    1 => {
                        let p: Vec<char> =
                            PIECES[rng.random_range(0..PIECES.len())].chars().collect();
                        chars.splice(at..at, p);
                    }
                    2 => {
                        let b = rng.random_range(0..chars.len());
                        chars.swap(at, b);
                    }
                    _ => {
                        let end = (at + rng.random_range(1..40)).min(chars.len());
                        let dup: Vec<char> = chars[at..end].to_vec();
                        chars.splice(at..at, dup);
                    }
                }
            }
            chars.into_iter().collect()
        };
        check(&text);
    }
}
