//! fio's reporting options, and the values of two file options read here to keep
//! `job.rs` short (`size` with its percentage, `filename_format`): the latency logs, bandwidth and IOPS logs and how they are
//! averaged (`write_*_log`, `log_avg_msec`, `log_max_value`, `log_offset`), the sampling
//! interval of the bandwidth and IOPS statistics, and which percentiles a report gives
//! (`percentile_list`, `clat_percentiles`, `lat_percentiles`, `slat_percentiles`).

use super::ini::Opt;
use super::value;
use crate::model::stream::PERCENTILES;

/// A job's reporting options, as fio's defaults have them until given.
#[derive(Debug, Clone, PartialEq)]
pub struct JobOut {
    pub bw_log: Option<String>,
    pub lat_log: Option<String>,
    pub iops_log: Option<String>,
    pub log_avg_ms: u64,
    pub log_max: bool,
    pub log_offset: bool,
    pub percentiles: Vec<f64>,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    pub bw_avg_ms: u64,
    pub iops_avg_ms: u64,
}

impl Default for JobOut {
    fn default() -> JobOut {
        JobOut {
            bw_log: None,
            lat_log: None,
            iops_log: None,
            log_avg_ms: 0,
            log_max: false,
            log_offset: false,
            percentiles: PERCENTILES.to_vec(),
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            bw_avg_ms: 500,
            iops_avg_ms: 500,
        }
    }
}

/// `size=`: bytes, or `N%` (1 to 100: fio's `size_percent`, a share of each existing
/// file's or device's size).
pub fn size(v: &str, kb: u64) -> Result<(Option<u64>, Option<f64>), String> {
    if let Some(p) = v.trim().strip_suffix('%') {
        let pct: f64 = p
            .trim()
            .parse()
            .map_err(|_| format!("`{v}`: a percentage is a number from 1 to 100 before `%`"))?;
        if !(pct > 0.0 && pct <= 100.0) {
            return Err(format!("`{v}`: a percentage is from 1 to 100"));
        }
        return Ok((None, Some(pct)));
    }
    Ok((Some(value::size(v, kb)?), None))
}

/// `filename_format=`: fsbench expands fio's `$jobname`, `$jobnum` and `$filenum`.
pub fn filename_format(v: &str) -> Result<(), String> {
    let bad = v.split('$').skip(1).find(|rest| {
        !["jobname", "jobnum", "filenum"]
            .iter()
            .any(|k| rest.starts_with(k))
    });
    match bad {
        Some(rest) => Err(format!(
            "`${}`: fsbench expands $jobname, $jobnum and $filenum",
            rest.split(|c: char| !c.is_ascii_alphanumeric())
                .next()
                .unwrap_or(rest)
        )),
        None => Ok(()),
    }
}

/// fio's `FIO_IO_U_LIST_MAX_LEN`: at most 20 percentiles.
const MAX_PERCENTILES: usize = 20;

/// `percentile_list=99:99.9`: up to 20 values, each above 0 and at most 100, as fio's
/// `str_split_parse` reads them (fio sorts them; so does fsbench).
pub fn percentile_list(v: &str) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    for part in v.split(':').filter(|p| !p.is_empty()) {
        let p: f64 = part.trim().parse().map_err(|_| {
            format!("`{part}` is not a number (percentiles are 0 to 100, `:` between)")
        })?;
        if !(p > 0.0 && p <= 100.0) {
            return Err(format!("{p} is not a percentile (above 0, at most 100)"));
        }
        out.push(p);
    }
    if out.is_empty() {
        return Err("needs at least one percentile".into());
    }
    if out.len() > MAX_PERCENTILES {
        return Err(format!(
            "{} percentiles: fio takes at most {MAX_PERCENTILES}",
            out.len()
        ));
    }
    out.sort_by(f64::total_cmp);
    Ok(out)
}

/// A log prefix: the value, or the job's name when the option stands alone (as fio).
fn prefix(o: &Opt, jobname: &str) -> Result<Option<String>, String> {
    match o.value.as_deref() {
        None | Some("") => Ok(Some(jobname.to_string())),
        Some(v) if v.contains('\0') => Err("holds a NUL".into()),
        Some(v) => Ok(Some(v.to_string())),
    }
}

fn flag(o: &Opt) -> Result<bool, String> {
    match o.value.as_deref() {
        None => Ok(true),
        Some(v) => value::boolean(v),
    }
}

/// Read one reporting option into `out`; `None` when `key` is not one.
pub fn apply(out: &mut JobOut, jobname: &str, key: &str, o: &Opt) -> Option<Result<(), String>> {
    let need = || {
        o.value
            .as_deref()
            .ok_or_else(|| "needs a value".to_string())
    };
    let r = match key {
        "write_bw_log" => prefix(o, jobname).map(|p| out.bw_log = p),
        "write_lat_log" => prefix(o, jobname).map(|p| out.lat_log = p),
        "write_iops_log" => prefix(o, jobname).map(|p| out.iops_log = p),
        "log_avg_msec" => need()
            .and_then(|v| value::int(v, 1024))
            .map(|v| out.log_avg_ms = v),
        "log_max_value" => flag(o).map(|v| out.log_max = v),
        "log_offset" => flag(o).map(|v| out.log_offset = v),
        "percentile_list" => need()
            .and_then(percentile_list)
            .map(|v| out.percentiles = v),
        "clat_percentiles" => flag(o).map(|v| out.clat_percentiles = v),
        "lat_percentiles" => flag(o).map(|v| out.lat_percentiles = v),
        "slat_percentiles" => flag(o).map(|v| out.slat_percentiles = v),
        "bw_avg_time" | "iops_avg_time" => need().and_then(|v| {
            let ms = value::int(v, 1024)?;
            if ms == 0 {
                return Err("0: the interval must be at least 1 ms".into());
            }
            if key == "bw_avg_time" {
                out.bw_avg_ms = ms;
            } else {
                out.iops_avg_ms = ms;
            }
            Ok(())
        }),
        _ => return None,
    };
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_lists_are_read_as_fio_reads_them() {
        assert_eq!(
            percentile_list("99.9:50:99").unwrap(),
            vec![50.0, 99.0, 99.9]
        );
        assert!(percentile_list("0").is_err());
        assert!(percentile_list("101").is_err());
        assert!(percentile_list("x").is_err());
        let many = vec!["50"; 21].join(":");
        assert!(percentile_list(&many).unwrap_err().contains("at most 20"));
    }
}
