//! Sizes, durations, rates and counts as people write and read them: parsing what the
//! command line and plans give, formatting what reports print. One place, so that every
//! command agrees on what `4k` or `1.5 GiB` means.

pub mod figure;

/// A size in binary units, e.g. `1.5 GiB` (`512 B` below a KiB).
pub fn human_bytes(n: f64) -> String {
    const U: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}", U[i])
    } else {
        format!("{v:.1} {}", U[i])
    }
}

/// [`human_bytes`] of a byte count (exact below a KiB: `512 B`, `1.0 KiB`).
pub fn human_bytes_u64(b: u64) -> String {
    human_bytes(b as f64)
}

/// `n` and a noun, plural when `n` is not 1: "1 thread", "50 threads", "1 file".
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {noun}")
    } else if let Some(stem) = noun
        .strip_suffix('y')
        .filter(|s| !s.ends_with(['a', 'e', 'o', 'u']))
    {
        format!("{n} {stem}ies")
    } else if ["s", "x", "ch", "sh"].iter().any(|e| noun.ends_with(e)) {
        format!("{n} {noun}es")
    } else {
        format!("{n} {noun}s")
    }
}

/// Parse a size: plain bytes or with K/M/G/T (powers of 1024; "KiB", "KB",
/// "k" all accepted).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| format!("bad size {s:?}"))?;
    let mul: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("bad size unit in {s:?} (use K, M, G, T)")),
    };
    let bytes = (v * mul as f64).round();
    // 2^64 and above do not fit: `as` would saturate them into a different size.
    if bytes >= 18_446_744_073_709_551_616.0 {
        return Err(format!(
            "size {s:?} is too large: the largest is {} bytes (16 EiB, just under 16777216T)",
            u64::MAX
        ));
    }
    Ok(bytes as u64)
}

/// Parse a duration into milliseconds: "5.2ms", "500us", "0.01s", "5.2" (ms).
pub fn parse_ms(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| format!("bad duration {s:?}"))?;
    let mul = match unit.trim() {
        "" | "ms" => 1.0,
        "us" | "µs" => 1e-3,
        "s" => 1e3,
        _ => return Err(format!("bad duration unit in {s:?} (use ms, us, s)")),
    };
    Ok(v * mul)
}

/// Parse a rate into MB/s (10^6 bytes): "50MB/s", "50", "48MiB/s", "1GB/s".
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| format!("bad rate {s:?}"))?;
    let unit = unit.trim().trim_end_matches("/s").to_ascii_lowercase();
    let mul = match unit.as_str() {
        "" | "mb" | "m" => 1.0,
        "mib" => 1.048576,
        "kb" | "k" => 1e-3,
        "kib" => 1.024e-3,
        "gb" | "g" => 1e3,
        "gib" => 1073.741824,
        _ => return Err(format!("bad rate unit in {s:?} (use MB/s, MiB/s, GB/s)")),
    };
    Ok(v * mul)
}

/// Parse a bandwidth into bits per second: "10mbit", "100kbit", "1gbit", "64000"
/// (bit/s), "12.5MB/s" (bytes, powers of 1000), "1MiB/s".
pub fn parse_bandwidth(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| format!("bad bandwidth {s:?}"))?;
    let u = unit.trim();
    let lower = u.to_ascii_lowercase();
    let bits = lower
        .strip_suffix("bit/s")
        .or_else(|| lower.strip_suffix("bit"))
        .or_else(|| lower.strip_suffix("bps"));
    let mul = if u.is_empty() {
        1.0
    } else if let Some(prefix) = bits {
        match prefix {
            "" => 1.0,
            "k" => 1e3,
            "m" => 1e6,
            "g" => 1e9,
            _ => return Err(format!("bad bandwidth unit in {s:?}")),
        }
    } else {
        // Bytes per second: "MB/s", "KiB/s"...
        let bytes = match u.trim_end_matches("/s") {
            "B" => 1.0,
            "KB" | "kB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "KiB" => 1024.0,
            "MiB" => 1048576.0,
            "GiB" => 1073741824.0,
            _ => {
                return Err(format!(
                    "bad bandwidth unit in {s:?} (use kbit, mbit, gbit, or KB/s, MB/s)"
                ))
            }
        };
        8.0 * bytes
    };
    let bps = v * mul;
    if !(bps.is_finite() && bps > 0.0) {
        return Err(format!("bandwidth must be positive: {s:?}"));
    }
    Ok(bps)
}

/// Parse a round-trip time into seconds: "20ms", "500us", "0.3s", "20" (ms).
pub fn parse_rtt(s: &str) -> Result<f64, String> {
    let ms = parse_ms(s)?;
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(format!("round-trip time must not be negative: {s:?}"));
    }
    Ok(ms / 1e3)
}

/// Human form of a bandwidth in bit/s.
pub fn human_bps(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{} Mbit/s", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{} kbit/s", bps / 1e3)
    } else {
        format!("{bps} bit/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidths_and_rtts_parse() {
        assert_eq!(parse_bandwidth("10mbit").unwrap(), 10e6);
        assert_eq!(parse_bandwidth("100kbit").unwrap(), 100e3);
        assert_eq!(parse_bandwidth("1Gbit").unwrap(), 1e9);
        assert_eq!(parse_bandwidth("64000").unwrap(), 64000.0);
        assert_eq!(parse_bandwidth("10Mbps").unwrap(), 10e6);
        assert_eq!(parse_bandwidth("1MB/s").unwrap(), 8e6);
        assert_eq!(parse_bandwidth("1MiB/s").unwrap(), 8.0 * 1048576.0);
        assert!(parse_bandwidth("10furlongs").is_err());
        assert!(parse_bandwidth("0mbit").is_err());
        assert!((parse_rtt("20ms").unwrap() - 0.02).abs() < 1e-12);
        assert!((parse_rtt("0.3s").unwrap() - 0.3).abs() < 1e-12);
        assert!((parse_rtt("500us").unwrap() - 0.0005).abs() < 1e-12);
    }

    #[test]
    fn formats_and_parses() {
        assert_eq!(human_bytes(512.0), "512 B");
        assert_eq!(human_bytes(1536.0), "1.5 KiB");
        assert_eq!(human_bytes_u64(1024), "1.0 KiB");
        assert_eq!(count(1u64, "entry"), "1 entry");
        assert_eq!(count(2u64, "entry"), "2 entries");
        assert_eq!(count(3u64, "pass"), "3 passes");
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("1.5M").unwrap(), 1572864);
        assert!(parse_size("4q").is_err());
        let e = parse_size("16777216T").unwrap_err();
        assert!(
            e.contains("too large") && e.contains("18446744073709551615"),
            "{e}"
        );
        assert_eq!(parse_size("16777215T").unwrap(), 16777215 << 40);
        assert_eq!(parse_ms("500us").unwrap(), 0.5);
        assert_eq!(human_bps(1e8), "100 Mbit/s");
    }

    #[test]
    fn plurals() {
        assert_eq!(count(1u64, "thread"), "1 thread");
        assert_eq!(count(0u64, "file"), "0 files");
        assert_eq!(count(3u64, "directory"), "3 directories");
        assert_eq!(count(1u64, "directory"), "1 directory");
        assert_eq!(count(2u64, "entry"), "2 entries");
        assert_eq!(count(2u64, "day"), "2 days");
    }
}
