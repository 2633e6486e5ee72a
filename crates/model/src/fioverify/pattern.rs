//! `verify_pattern=`: the bytes fio repeats over a verifying write (`lib/pattern.c`'s
//! `parse_and_fill_pattern`): hexadecimal numbers (`0xdeadbeef`, bytes in the order
//! written; an odd count of digits makes the first a byte of its own), decimal numbers
//! (their bytes least significant first, `0` one zero byte), and `"strings"`, one after
//! another with nothing between (`0xff"abc"12`). fio's `'file'` and `%o` (the block's
//! offset) are refused.

/// The longest pattern fio takes (`MAX_PATTERN_SIZE`).
pub const MAX: usize = 512;

/// The pattern's bytes, or why not.
pub fn parse(v: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut rest = v;
    while !rest.is_empty() {
        let (bytes, tail) = if let Some(s) = rest.strip_prefix('"') {
            let end = s
                .find('"')
                .ok_or_else(|| format!("`{v}`: a string without its closing `\"`"))?;
            (s.as_bytes()[..end].to_vec(), &s[end + 1..])
        } else if rest.starts_with('\'') || rest.starts_with('%') {
            return Err(format!(
                "`{v}`: fio's pattern files ('...') and formats (%o) are not run by fsbench; give the bytes (0x.., numbers, \"strings\")"
            ));
        } else if let Some(h) = rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
            hex(v, h)?
        } else {
            decimal(v, rest)?
        };
        out.extend_from_slice(&bytes);
        rest = tail;
    }
    if out.is_empty() {
        return Err(format!("`{v}`: an empty pattern"));
    }
    if out.len() > MAX {
        return Err(format!(
            "`{v}`: {} bytes (fio takes at most {MAX})",
            out.len()
        ));
    }
    Ok(out)
}

/// The digits after `0x` up to the next `0x` or non-digit.
fn hex<'a>(v: &str, h: &'a str) -> Result<(Vec<u8>, &'a str), String> {
    let mut n = h.bytes().take_while(u8::is_ascii_hexdigit).count();
    // fio's look-back: in `0xff0x14` the `0` before `x14` starts the next number.
    if n < h.len() && n > 0 && matches!(h.as_bytes()[n], b'x' | b'X') {
        n -= 1;
    }
    if n == 0 {
        return Err(format!("`{v}`: `0x` without hexadecimal digits"));
    }
    let digits = &h[..n];
    let mut out = Vec::with_capacity(n.div_ceil(2));
    let first = n % 2;
    if first == 1 {
        out.push(u8::from_str_radix(&digits[..1], 16).expect("a hex digit"));
    }
    for i in (first..n).step_by(2) {
        out.push(u8::from_str_radix(&digits[i..i + 2], 16).expect("hex digits"));
    }
    Ok((out, &h[n..]))
}

/// A decimal number (a C `int`) up to the next non-digit or `0x`.
fn decimal<'a>(v: &str, s: &'a str) -> Result<(Vec<u8>, &'a str), String> {
    let t = s.trim_start();
    let sign = usize::from(t.starts_with('-') || t.starts_with('+'));
    let mut n = sign + t[sign..].bytes().take_while(u8::is_ascii_digit).count();
    if let Some(x) = t[..n].to_ascii_lowercase().find("0x") {
        n = x;
    }
    let val: i64 = t[..n]
        .parse()
        .map_err(|_| format!("`{v}`: `{s}` is no number, `0x` number or \"string\""))?;
    if val > i64::from(i32::MAX) || val < i64::from(i32::MIN) {
        return Err(format!("`{v}`: {val} is out of a C int's range"));
    }
    let mut u = val as i32 as u32;
    let mut out = Vec::new();
    if u == 0 {
        out.push(0);
    }
    while u != 0 {
        out.push(u as u8);
        u >>= 8;
    }
    Ok((out, &t[n..]))
}

/// fio's `cpy_pattern`: `p` repeated over `buf` from its start.
pub fn fill(p: &[u8], buf: &mut [u8]) {
    for c in buf.chunks_mut(p.len()) {
        c.copy_from_slice(&p[..c.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_as_fio_parses_them() {
        assert_eq!(parse("0xdeadbeef").unwrap(), vec![0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(parse("0xabc").unwrap(), vec![0x0a, 0xbc]);
        assert_eq!(parse("0xff0x14").unwrap(), vec![0xff, 0x14]);
        assert_eq!(parse("258").unwrap(), vec![0x02, 0x01]);
        assert_eq!(parse("0").unwrap(), vec![0]);
        assert_eq!(parse("-1").unwrap(), vec![0xff; 4]);
        assert_eq!(parse("\"ab\"0x01").unwrap(), b"ab\x01".to_vec());
        assert!(parse("%o").unwrap_err().contains("formats"));
        assert!(parse("\"ab").unwrap_err().contains("closing"));
        assert!(parse("zz").is_err());
        assert!(parse("4294967296").unwrap_err().contains("range"));
        let mut b = [0u8; 7];
        fill(&[1, 2, 3], &mut b);
        assert_eq!(b, [1, 2, 3, 1, 2, 3, 1]);
    }
}
