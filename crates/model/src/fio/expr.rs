//! Integer arithmetic in values: fio evaluates `(4*1024)` in a value, and hands a value in
//! which it replaced `$ncpus`, `$pagesize` or `$mb_memory` to `bc` when it holds `+`, `-`,
//! `*` or `/` (integer results, as `bc` gives without a scale). Integers, `+ - * / %`,
//! unary minus and parentheses; anything else is an error naming the expression.
//!
//! The parser is recursive descent, one call per parenthesis or sign: nesting is limited to
//! [`MAX_DEPTH`], far below what the stack holds (30,000 parentheses overflowed it and
//! aborted the process), and a deeper expression is an error like any other.

/// The deepest nesting of parentheses and signs evaluated.
pub const MAX_DEPTH: usize = 256;

struct P<'a> {
    s: &'a [u8],
    i: usize,
    text: &'a str,
    depth: usize,
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn err(&self, what: &str) -> String {
        format!("`{}`: {what} at character {}", shown(self.text), self.i + 1)
    }

    /// One level deeper (a parenthesis or a sign), refused past [`MAX_DEPTH`].
    fn deeper(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(&format!(
                "nested more than {MAX_DEPTH} deep (parentheses and signs)"
            )));
        }
        Ok(())
    }

    fn sum(&mut self) -> Result<i64, String> {
        let mut v = self.product()?;
        loop {
            self.ws();
            match self.s.get(self.i) {
                Some(b'+') => {
                    self.i += 1;
                    v = v
                        .checked_add(self.product()?)
                        .ok_or_else(|| self.err("overflow"))?;
                }
                Some(b'-') => {
                    self.i += 1;
                    v = v
                        .checked_sub(self.product()?)
                        .ok_or_else(|| self.err("overflow"))?;
                }
                _ => return Ok(v),
            }
        }
    }

    fn product(&mut self) -> Result<i64, String> {
        let mut v = self.unary()?;
        loop {
            self.ws();
            let op = match self.s.get(self.i) {
                Some(c @ (b'*' | b'/' | b'%')) => *c,
                _ => return Ok(v),
            };
            self.i += 1;
            let r = self.unary()?;
            v = match op {
                b'*' => v.checked_mul(r),
                b'/' => v.checked_div(r),
                _ => v.checked_rem(r),
            }
            .ok_or_else(|| self.err("division by zero or overflow"))?;
        }
    }

    fn unary(&mut self) -> Result<i64, String> {
        self.ws();
        match self.s.get(self.i) {
            Some(b'-') => {
                self.deeper()?;
                self.i += 1;
                let v = self
                    .unary()?
                    .checked_neg()
                    .ok_or_else(|| self.err("overflow"));
                self.depth -= 1;
                v
            }
            Some(b'+') => {
                self.deeper()?;
                self.i += 1;
                let v = self.unary();
                self.depth -= 1;
                v
            }
            Some(b'(') => {
                self.deeper()?;
                self.i += 1;
                let v = self.sum()?;
                self.depth -= 1;
                self.ws();
                if self.s.get(self.i) != Some(&b')') {
                    return Err(self.err("expected `)`"));
                }
                self.i += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() => {
                let st = self.i;
                while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                    self.i += 1;
                }
                self.text[st..self.i]
                    .parse()
                    .map_err(|_| self.err("number out of range"))
            }
            _ => Err(self.err("expected a number")),
        }
    }
}

/// An expression for a message: a long one by its start.
fn shown(text: &str) -> String {
    const SHOWN: usize = 40;
    match text.char_indices().nth(SHOWN) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

/// Evaluate `text` as an integer expression.
pub fn eval(text: &str) -> Result<i64, String> {
    let mut p = P {
        s: text.as_bytes(),
        i: 0,
        text,
        depth: 0,
    };
    let v = p.sum()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("unexpected text"));
    }
    Ok(v)
}

/// Whether `value` holds arithmetic fio would hand to `bc`.
pub fn has_math(value: &str) -> bool {
    value.contains(['+', '-', '*', '/'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_arithmetic_as_bc_gives_it() {
        assert_eq!(eval("(4*1024)"), Ok(4096));
        assert_eq!(eval("8*2+1"), Ok(17));
        assert_eq!(eval("7/2"), Ok(3));
        assert_eq!(eval("-(2+3)*2"), Ok(-10));
        assert_eq!(eval(" 10 % 4 "), Ok(2));
        assert!(eval("4k*2").is_err());
        assert!(eval("(1+2").is_err());
        assert!(eval("1/0").is_err());
        assert!(eval("-(0-9223372036854775807-1)").is_err());
    }

    #[test]
    fn nesting_is_bounded() {
        let ok = format!("{}7{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert_eq!(eval(&ok), Ok(7));
        assert_eq!(eval(&format!("{}7", "-".repeat(MAX_DEPTH))), Ok(7));
        for deep in [
            format!("{}7{}", "(".repeat(30_000), ")".repeat(30_000)),
            format!("{}7", "-+".repeat(30_000)),
        ] {
            let e = eval(&deep).unwrap_err();
            assert!(e.contains("nested more than 256 deep"), "{e}");
            assert!(
                e.contains(&format!("at character {}", MAX_DEPTH + 1)),
                "{e}"
            );
            assert!(e.len() < 200, "the expression is shown in part: {e}");
        }
    }
}
