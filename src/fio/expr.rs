//! Integer arithmetic in values: fio evaluates `(4*1024)` in a value, and hands a value in
//! which it replaced `$ncpus`, `$pagesize` or `$mb_memory` to `bc` when it holds `+`, `-`,
//! `*` or `/` (integer results, as `bc` gives without a scale). Integers, `+ - * / %`,
//! unary minus and parentheses; anything else is an error naming the expression.

struct P<'a> {
    s: &'a [u8],
    i: usize,
    text: &'a str,
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn err(&self, what: &str) -> String {
        format!("`{}`: {what} at character {}", self.text, self.i + 1)
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
                self.i += 1;
                Ok(-self.unary()?)
            }
            Some(b'+') => {
                self.i += 1;
                self.unary()
            }
            Some(b'(') => {
                self.i += 1;
                let v = self.sum()?;
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

/// Evaluate `text` as an integer expression.
pub fn eval(text: &str) -> Result<i64, String> {
    let mut p = P {
        s: text.as_bytes(),
        i: 0,
        text,
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
    }
}
