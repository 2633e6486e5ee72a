//! Values as fio reads them: sizes with fio's suffix rules (`k` is 1024 unless
//! `kb_base=1000`, and the `KiB` forms are then the decimal ones: fio's compatibility
//! mode), times with fio's units, integers, booleans, ranges and `bssplit` lists.
//!
//! The rules follow fio's `parse.c` (`str_to_decimal`, `get_mult_bytes`, `get_mult_time`):
//! the number is read as `strtoll` reads it (decimal, or hexadecimal with `0x`), then the
//! first letters after it choose the multiplier. Where fio silently takes an unknown
//! suffix as 1 (`bs=4x` is 4 bytes there), fsbench refuses it: a typo in a job file is an
//! error here, not a different job.

use crate::model::stream::{Zone, Zones};

/// Leading integer as `strtoll` with base 10 or 16 (when the text holds `0x`) reads it:
/// the value and the rest of the text.
fn leading_int(s: &str) -> Result<(i64, &str), String> {
    let t = s.trim_start();
    let hex = s.contains("0x") || s.contains("0X");
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let body_digits = if hex {
        body.strip_prefix("0x")
            .or_else(|| body.strip_prefix("0X"))
            .unwrap_or(body)
    } else {
        body
    };
    let n = body_digits
        .bytes()
        .take_while(|b| {
            if hex {
                b.is_ascii_hexdigit()
            } else {
                b.is_ascii_digit()
            }
        })
        .count();
    if n == 0 {
        return Err(format!("`{s}` is not a number"));
    }
    let digits = &body_digits[..n];
    let v = i64::from_str_radix(digits, if hex { 16 } else { 10 })
        .map_err(|_| format!("`{s}` is out of range"))?;
    let rest = &body_digits[n..];
    Ok((if neg { -v } else { v }, rest))
}

/// The multiplier of a size suffix (`rest` is the text after the number), as fio's
/// `__get_mult_bytes` reads it: lower-cased, cut at the first `:`, `-`, `,` or `/`.
fn size_mult(rest: &str, kb_base: u64, orig: &str) -> Result<u64, String> {
    let r = rest.trim_start();
    let first = r.chars().next();
    match first {
        None => return Ok(1),
        Some('%') => {
            return Err(format!(
                "`{orig}`: sizes in percent of the device are not supported by fsbench"
            ))
        }
        Some(c) if !c.is_ascii_alphabetic() => {
            return Err(format!("`{orig}`: unexpected `{c}` after the number"))
        }
        _ => {}
    }
    let c: String = r
        .chars()
        .take_while(|c| !matches!(c, ':' | '-' | ',' | '/'))
        .collect::<String>()
        .to_ascii_lowercase();
    // With kb_base 1024 (the default) the IEC forms are the decimal ones, and the
    // other way round with kb_base 1000: fio's compatibility rule.
    let iec = if kb_base == 1000 { 1024 } else { 1000 };
    let (pow, mult) = if let Some(p) = ["kib", "mib", "gib", "tib", "pib"]
        .iter()
        .position(|u| c.starts_with(u))
    {
        (p as u32 + 1, iec)
    } else if let Some(p) = ["k", "m", "g", "t", "p"]
        .iter()
        .position(|u| c.starts_with(u))
    {
        (p as u32 + 1, kb_base)
    } else {
        return Err(format!(
            "`{orig}`: unknown size suffix `{r}` (k, m, g, t, p, optionally with b or ib)"
        ));
    };
    mult.checked_pow(pow)
        .ok_or_else(|| format!("`{orig}` is out of range"))
}

/// A size in bytes (`4k`, `1m`, `0x1000`, `(4*1024)`), with fio's suffix rules.
pub fn size(s: &str, kb_base: u64) -> Result<u64, String> {
    let s = s.trim();
    if s.starts_with('(') {
        let v = super::expr::eval(s)?;
        return u64::try_from(v).map_err(|_| format!("`{s}` is negative"));
    }
    let (v, rest) = leading_int(s)?;
    if v < 0 {
        return Err(format!("`{s}` is negative"));
    }
    let m = size_mult(rest, kb_base, s)?;
    (v as u64)
        .checked_mul(m)
        .ok_or_else(|| format!("`{s}` is out of range"))
}

/// A time in microseconds. A bare number is in seconds when `seconds` (runtime,
/// ramp_time, startdelay), else in microseconds (thinktime); the units are fio's: `us`,
/// `usec`, `ms`, `msec`, `s`, `m`, `h`, `d`.
pub fn time_us(s: &str, seconds: bool) -> Result<u64, String> {
    let s = s.trim();
    let (v, rest) = if s.starts_with('(') {
        (super::expr::eval(s)?, "")
    } else {
        leading_int(s)?
    };
    if v < 0 {
        return Err(format!("`{s}` is negative"));
    }
    let unit = rest.trim().to_ascii_lowercase();
    let mult: u64 = if unit.is_empty() {
        if seconds {
            1_000_000
        } else {
            1
        }
    } else if unit.starts_with("us") {
        1
    } else if unit.starts_with("ms") {
        1000
    } else if unit == "s" {
        1_000_000
    } else if unit == "m" {
        60_000_000
    } else if unit == "h" {
        3_600_000_000
    } else if unit == "d" {
        86_400_000_000
    } else {
        return Err(format!(
            "`{s}`: unknown time unit `{}` (us, ms, s, m, h or d)",
            rest.trim()
        ));
    };
    (v as u64)
        .checked_mul(mult)
        .ok_or_else(|| format!("`{s}` is out of range"))
}

/// An integer option (`numjobs=4`, `fsync=32`); fio reads these with the size rules too.
pub fn int(s: &str, kb_base: u64) -> Result<u64, String> {
    size(s, kb_base)
}

/// A boolean option with a value: fio takes an integer (`direct=1`), 0 or 1.
pub fn boolean(s: &str) -> Result<bool, String> {
    match leading_int(s.trim()) {
        Ok((0, r)) if r.trim().is_empty() => Ok(false),
        Ok((1, r)) if r.trim().is_empty() => Ok(true),
        _ => Err(format!("`{s}` is not a boolean (0 or 1)")),
    }
}

/// Split a per-direction value `read[,write[,trim]]`: fio's `,` separated forms. An empty
/// part keeps the default (`bs=,8k`); a single value applies to reads and writes.
pub fn per_ddir(s: &str) -> Result<(Option<&str>, Option<&str>), String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    match parts.as_slice() {
        [one] => Ok((Some(one), Some(one))),
        [r, w] | [r, w, _] => Ok(((!r.is_empty()).then_some(*r), (!w.is_empty()).then_some(*w))),
        _ => Err(format!("`{s}`: at most read,write,trim values")),
    }
}

/// A range `lo-hi` (`bsrange=1k-16k`); fio also takes `lo:hi`.
pub fn range(s: &str, kb_base: u64) -> Result<(u64, u64), String> {
    let t = s.trim();
    // The separator is the first `-` or `:` after the first digit.
    let at = t
        .char_indices()
        .skip(1)
        .find(|(_, c)| *c == '-' || *c == ':')
        .map(|(i, _)| i)
        .ok_or_else(|| format!("`{s}` is not a range (lo-hi)"))?;
    let lo = size(&t[..at], kb_base)?;
    let hi = size(&t[at + 1..], kb_base)?;
    Ok((lo.min(hi), lo.max(hi)))
}

/// A `bssplit` list for one direction: `4k/10:64k/50:32k` (a size and a percentage per
/// part; a part without one shares what is left equally, as fio does).
pub fn bssplit(s: &str, kb_base: u64) -> Result<Vec<(u64, u32)>, String> {
    let mut out: Vec<(u64, Option<u32>)> = Vec::new();
    for part in s.split(':').map(str::trim) {
        if part.is_empty() {
            return Err(format!("`{s}`: an empty part"));
        }
        let (b, p) = match part.split_once('/') {
            Some((b, p)) => {
                let p = p.trim();
                let pv: u32 = p
                    .parse()
                    .map_err(|_| format!("`{part}`: `{p}` is not a percentage"))?;
                (b, Some(pv))
            }
            None => (part, None),
        };
        out.push((size(b, kb_base)?, p));
    }
    // fio's rule: parts without a percentage share what is left equally (rounded down);
    // only more than 100 with two or more such parts is refused. A draw past the last
    // part's share goes to the last part, as in fio's pick.
    let given: u32 = out.iter().filter_map(|x| x.1).sum();
    let open = out.iter().filter(|x| x.1.is_none()).count() as u32;
    if given > 100 && open > 1 {
        return Err(format!(
            "`{s}`: the percentages add up to {given}, over 100"
        ));
    }
    let share = if open == 1 && out.len() == 1 {
        100
    } else {
        100u32.saturating_sub(given).checked_div(open).unwrap_or(0)
    };
    let mut shared = Vec::new();
    for (b, p) in out {
        if b == 0 {
            return Err(format!("`{s}`: a block size of 0"));
        }
        shared.push((b, p.unwrap_or(share)));
    }
    Ok(shared)
}

/// The zones of one direction of `random_distribution=zoned:` (`zoned_abs:`), as fio's
/// `zone_split_ddir` reads them: `access/size` parts separated by `:` (an empty part ends
/// the list). The access shares must add up to 100; a size is a percentage of the file
/// (over 100 is 100; 0 or none shares what the others leave), or with `abs` a size in
/// bytes (none is 0).
pub fn zones(s: &str, kb_base: u64, abs: bool) -> Result<Zones, String> {
    let mut parts: Vec<(u32, Option<u64>)> = Vec::new();
    for part in s.split(':').map(str::trim) {
        if part.is_empty() {
            break;
        }
        let (a, z) = match part.split_once('/') {
            Some((a, z)) => (a, Some(z.trim())),
            None => (part, None),
        };
        let access = size(a, kb_base)?;
        let zsize = match z {
            Some(z) if abs => Some(size(z, kb_base)?),
            Some(z) => {
                let p: u64 = z
                    .parse()
                    .map_err(|_| format!("`{part}`: `{z}` is not a percentage"))?;
                (p > 0).then_some(p.min(100))
            }
            None if abs => Some(0),
            None => None,
        };
        parts.push((access.min(u32::MAX as u64) as u32, zsize));
    }
    if parts.is_empty() {
        return Ok(Zones::default());
    }
    let access: u64 = parts.iter().map(|p| p.0 as u64).sum();
    let sized: u64 = if abs {
        0
    } else {
        parts.iter().filter_map(|p| p.1).sum()
    };
    if access > 100 || sized > 100 {
        return Err(format!(
            "`{s}`: the zones' percentages add up to more than 100"
        ));
    }
    if access < 100 {
        return Err(format!(
            "`{s}`: the access percentages add up to {access}, not 100"
        ));
    }
    let missing = parts.iter().filter(|p| p.1.is_none()).count() as u64;
    let share = if missing == 1 && parts.len() == 1 {
        100
    } else {
        (100 - sized).checked_div(missing).unwrap_or(0)
    };
    Ok(Zones {
        abs,
        parts: parts
            .into_iter()
            .map(|(access, z)| Zone {
                access,
                size: z.unwrap_or(share),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_are_read_as_fio_reads_them() {
        let z = zones("60/10:30/20:10", 1024, false).unwrap();
        let got: Vec<(u32, u64)> = z.parts.iter().map(|p| (p.access, p.size)).collect();
        assert_eq!(got, [(60, 10), (30, 20), (10, 70)]);
        let z = zones("50/1m:50/3m", 1024, true).unwrap();
        assert!(z.abs);
        assert_eq!(z.parts[1].size, 3 << 20);
        assert!(zones("60/10:30/20", 1024, false)
            .unwrap_err()
            .contains("add up to 90"));
        assert!(zones("60/60:40/50", 1024, false)
            .unwrap_err()
            .contains("more than 100"));
        assert!(zones("", 1024, false).unwrap().parts.is_empty());
    }

    #[test]
    fn sizes_follow_fios_suffix_rules() {
        assert_eq!(size("4k", 1024), Ok(4096));
        assert_eq!(size("4K", 1024), Ok(4096));
        assert_eq!(size("4kb", 1024), Ok(4096));
        // fio's compatibility rule: with kb_base=1024, KiB is decimal.
        assert_eq!(size("4KiB", 1024), Ok(4000));
        assert_eq!(size("4KiB", 1000), Ok(4096));
        assert_eq!(size("4k", 1000), Ok(4000));
        assert_eq!(size("1m", 1024), Ok(1 << 20));
        assert_eq!(size("1g", 1024), Ok(1 << 30));
        assert_eq!(size("2MiB", 1000), Ok(2 << 20));
        assert_eq!(size("1t", 1024), Ok(1 << 40));
        assert_eq!(size("512", 1024), Ok(512));
        assert_eq!(size("0x1000", 1024), Ok(4096));
        assert_eq!(size("(4*1024)", 1024), Ok(4096));
        assert!(size("4x", 1024)
            .unwrap_err()
            .contains("unknown size suffix"));
        assert!(size("k", 1024).unwrap_err().contains("not a number"));
        assert!(size("-4k", 1024).unwrap_err().contains("negative"));
        assert!(size("50%", 1024).unwrap_err().contains("percent"));
        assert!(size("99999999999p", 1024).is_err());
    }

    #[test]
    fn times_follow_fios_units() {
        assert_eq!(time_us("10", true), Ok(10_000_000));
        assert_eq!(time_us("10", false), Ok(10));
        assert_eq!(time_us("10s", false), Ok(10_000_000));
        assert_eq!(time_us("250ms", true), Ok(250_000));
        assert_eq!(time_us("5us", true), Ok(5));
        assert_eq!(time_us("2m", true), Ok(120_000_000));
        assert_eq!(time_us("1h", true), Ok(3_600_000_000));
        assert!(time_us("10sec", true).is_err());
        assert!(time_us("x", true).is_err());
    }

    #[test]
    fn booleans_ranges_and_splits() {
        assert_eq!(boolean("1"), Ok(true));
        assert_eq!(boolean("0"), Ok(false));
        assert!(boolean("2").is_err());
        assert!(boolean("true").is_err());
        assert_eq!(range("1k-16k", 1024), Ok((1024, 16384)));
        assert_eq!(range("16k:1k", 1024), Ok((1024, 16384)));
        assert!(range("4k", 1024).is_err());
        assert_eq!(per_ddir("4k,8k"), Ok((Some("4k"), Some("8k"))));
        assert_eq!(per_ddir(",8k"), Ok((None, Some("8k"))));
        assert_eq!(per_ddir("4k"), Ok((Some("4k"), Some("4k"))));
        assert_eq!(
            bssplit("4k/10:64k/50:32k", 1024),
            Ok(vec![(4096, 10), (65536, 50), (32768, 40)])
        );
        assert_eq!(
            bssplit("4k:8k:16k", 1024),
            Ok(vec![(4096, 33), (8192, 33), (16384, 33)])
        );
        assert_eq!(bssplit("8k", 1024), Ok(vec![(8192, 100)]));
        assert!(bssplit("4k/60:8k:16k:32k/50", 1024).is_err());
        assert!(bssplit("4k/60:x", 1024).is_err());
    }
}
