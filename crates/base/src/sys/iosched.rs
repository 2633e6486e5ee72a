//! The idle window of the I/O scheduler under a directory: how long BFQ waits after a
//! synchronous read for the same process's next request (`iosched/slice_idle_us`). A
//! workload variable set to `idle`, `idle+DURATION` or `idle-DURATION` (`-s thinkmin=idle+1ms`)
//! is resolved to microseconds from the device at run time, so that the deceptive-idleness
//! study's adversary waits just past the window of the disk it runs on.
//!
//! mq-deadline, kyber and none do not idle, nor does BFQ with `slice_idle` 0 (the study's
//! control: BFQ with waiting switched off). Under them `idle` is BFQ's kernel default, 8 ms
//! (`bfq_slice_idle`, NSEC_PER_SEC / 125), so that a plan comparing schedulers runs the same
//! think time under each; the note of the run says so.

use std::path::{Path, PathBuf};

/// BFQ's default `slice_idle`, in microseconds.
pub const BFQ_DEFAULT_IDLE_US: u64 = 8000;

/// The idle window found for a device, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct IdleWindow {
    pub us: u64,
    /// Where the value came from, for the run's notes.
    pub source: String,
}

/// The sysfs queue directory of the block device numbered `dev` (a partition's is its
/// disk's).
fn queue_dir(dev: (u32, u32)) -> Option<PathBuf> {
    let d = std::fs::canonicalize(format!("/sys/dev/block/{}:{}", dev.0, dev.1)).ok()?;
    [d.join("queue"), d.parent()?.join("queue")]
        .into_iter()
        .find(|q| q.is_dir())
}

/// The scheduler in use from a `queue/scheduler` text (`none [bfq] mq-deadline`).
pub fn active_scheduler(text: &str) -> Option<&str> {
    let t = text.trim();
    if let Some(s) = t.split_whitespace().find(|w| w.starts_with('[')) {
        return Some(s.trim_matches(['[', ']']));
    }
    // A queue without schedulers to choose from shows one word, `none`.
    (!t.is_empty() && !t.contains(' ')).then_some(t)
}

/// The idle window of the queue at `queue` (named `dev` in the notes).
fn window_of(queue: &Path, dev: &str) -> Result<IdleWindow, String> {
    let sched_file = queue.join("scheduler");
    let text = std::fs::read_to_string(&sched_file)
        .map_err(|e| format!("{}: {e}", sched_file.display()))?;
    let sched = active_scheduler(&text)
        .ok_or_else(|| format!("{}: no scheduler in {text:?}", sched_file.display()))?;
    if sched != "bfq" {
        return Ok(IdleWindow {
            us: BFQ_DEFAULT_IDLE_US,
            source: format!(
                "{dev} runs {sched}, which does not idle: BFQ's kernel default slice_idle, {} us",
                BFQ_DEFAULT_IDLE_US
            ),
        });
    }
    let read = |name: &str| -> Option<u64> {
        std::fs::read_to_string(queue.join("iosched").join(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    if let Some(0) = read("slice_idle_us").or(read("slice_idle")) {
        return Ok(IdleWindow {
            us: BFQ_DEFAULT_IDLE_US,
            source: format!(
                "{dev} runs bfq with slice_idle 0, which does not idle: BFQ's kernel default slice_idle, {} us",
                BFQ_DEFAULT_IDLE_US
            ),
        });
    }
    if let Some(us) = read("slice_idle_us") {
        return Ok(IdleWindow {
            us,
            source: format!("{dev} runs bfq: iosched/slice_idle_us = {us}"),
        });
    }
    match read("slice_idle") {
        Some(ms) => Ok(IdleWindow {
            us: ms * 1000,
            source: format!("{dev} runs bfq: iosched/slice_idle = {ms} ms"),
        }),
        None => Err(format!(
            "{dev} runs bfq, but neither {0}/iosched/slice_idle_us nor {0}/iosched/slice_idle could be read",
            queue.display()
        )),
    }
}

/// The idle window of the device holding `dir`'s file system.
pub fn idle_window(dir: &Path) -> Result<IdleWindow, String> {
    let dev = super::blockstat::device_of(dir)
        .ok_or_else(|| format!("{}: cannot stat it", dir.display()))?;
    let queue = queue_dir(dev).ok_or_else(|| {
        format!(
            "{} is on no block device with a scheduler (device {}:{}: tmpfs, an overlay, FUSE or NFS); \
             `idle` is read from the scheduler of the disk under the run",
            dir.display(),
            dev.0,
            dev.1
        )
    })?;
    let name = queue
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| format!("{}:{}", dev.0, dev.1));
    window_of(&queue, &name)
}

/// `idle`, `idle+D` or `idle-D` (D a duration: `1ms`, `500us`, `0.5ms`): the offset from the
/// window in microseconds; `None` when `v` is no such value.
fn offset_us(v: &str) -> Option<Result<i64, String>> {
    let rest = v.trim().strip_prefix("idle")?;
    let rest = rest.trim();
    if rest.is_empty() {
        return Some(Ok(0));
    }
    let (sign, d) = match rest.split_at(1) {
        ("+", d) => (1.0, d),
        ("-", d) => (-1.0, d),
        _ => return None,
    };
    Some(
        crate::units::parse_ms(d)
            .map(|ms| (sign * ms * 1000.0).round() as i64)
            .map_err(|e| format!("{v:?}: {e}; write idle, idle+1ms or idle-500us")),
    )
}

/// Resolve every `-s NAME=idle[±D]` in `set` to microseconds from `window` (read only when
/// one is there); returns a note per resolved variable. A value that falls below zero is an
/// error.
pub fn resolve_sets(
    set: &mut [(String, String)],
    window: impl FnOnce() -> Result<IdleWindow, String>,
) -> Result<Vec<String>, String> {
    let mut window = Some(window);
    let mut found: Option<IdleWindow> = None;
    let mut notes = Vec::new();
    for (k, v) in set.iter_mut() {
        let Some(off) = offset_us(v) else { continue };
        let off = off.map_err(|e| format!("-s {k}={e}"))?;
        if found.is_none() {
            let w = window.take().expect("read once")();
            found = Some(w.map_err(|e| format!("-s {k}={v}: {e}"))?);
        }
        let w = found.as_ref().expect("read above");
        let us = w.us as i64 + off;
        if us < 0 {
            return Err(format!(
                "-s {k}={v}: the idle window is {} us ({}), so this is {us} us, below zero",
                w.us, w.source
            ));
        }
        notes.push(format!("idle window: {k}={v} = {us} us ({})", w.source));
        *v = us.to_string();
    }
    Ok(notes)
}

/// `set` with every `idle[±D]` value replaced by a number, for loading the workload before
/// its directory (and so its device) is known.
pub fn placeholders(set: &[(String, String)]) -> Vec<(String, String)> {
    set.iter()
        .map(|(k, v)| match offset_us(v) {
            Some(_) => (k.clone(), BFQ_DEFAULT_IDLE_US.to_string()),
            None => (k.clone(), v.clone()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_values() {
        assert_eq!(offset_us("idle").unwrap(), Ok(0));
        assert_eq!(offset_us("idle+1ms").unwrap(), Ok(1000));
        assert_eq!(offset_us("idle - 500us").unwrap(), Ok(-500));
        assert_eq!(offset_us("idle+0.25ms").unwrap(), Ok(250));
        assert!(offset_us("idle+1h").unwrap().is_err());
        assert!(offset_us("idleness").is_none());
        assert!(offset_us("7000").is_none());
        assert!(offset_us("").is_none());
    }

    #[test]
    fn schedulers() {
        assert_eq!(active_scheduler("none [bfq] mq-deadline\n"), Some("bfq"));
        assert_eq!(
            active_scheduler("[none] mq-deadline kyber bfq"),
            Some("none")
        );
        assert_eq!(active_scheduler("none\n"), Some("none"));
        assert_eq!(active_scheduler(""), None);
    }

    fn fake_queue(sched: &str, files: &[(&str, &str)]) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "fsbench-iosched-{}-{sched}-{}",
            std::process::id(),
            files.len()
        ));
        std::fs::create_dir_all(d.join("iosched")).unwrap();
        std::fs::write(d.join("scheduler"), sched).unwrap();
        for (n, v) in files {
            std::fs::write(d.join("iosched").join(n), v).unwrap();
        }
        d
    }

    #[test]
    fn windows_from_sysfs() {
        let q = fake_queue(
            "none [bfq]",
            &[("slice_idle_us", "6000\n"), ("slice_idle", "6\n")],
        );
        assert_eq!(window_of(&q, "sdx").unwrap().us, 6000);
        std::fs::remove_file(q.join("iosched/slice_idle_us")).unwrap();
        let w = window_of(&q, "sdx").unwrap();
        assert_eq!(w.us, 6000);
        assert!(w.source.contains("slice_idle = 6 ms"), "{}", w.source);
        std::fs::remove_file(q.join("iosched/slice_idle")).unwrap();
        assert!(window_of(&q, "sdx").unwrap_err().contains("neither"));
        std::fs::remove_dir_all(&q).unwrap();
        let q = fake_queue("[mq-deadline] none bfq", &[]);
        let w = window_of(&q, "sdx").unwrap();
        assert_eq!(w.us, BFQ_DEFAULT_IDLE_US);
        assert!(
            w.source.contains("mq-deadline, which does not idle"),
            "{}",
            w.source
        );
        std::fs::remove_dir_all(&q).unwrap();
        // BFQ with its waiting off waits for nothing: the adversary thinks as under the
        // others.
        let q = fake_queue("none [bfq] ", &[("slice_idle_us", "0\n")]);
        let w = window_of(&q, "sdx").unwrap();
        assert_eq!(w.us, BFQ_DEFAULT_IDLE_US);
        assert!(
            w.source.contains("slice_idle 0, which does not idle"),
            "{}",
            w.source
        );
        std::fs::remove_dir_all(&q).unwrap();
    }

    #[test]
    fn sets_resolved_once() {
        let mut set = vec![
            ("thinkmin".to_string(), "idle+1ms".to_string()),
            ("burst".to_string(), "4".to_string()),
            ("thinkmean".to_string(), "idle+1ms".to_string()),
        ];
        let w = || {
            Ok(IdleWindow {
                us: 8000,
                source: "test".into(),
            })
        };
        let notes = resolve_sets(&mut set, w).unwrap();
        assert_eq!(set[0].1, "9000");
        assert_eq!(set[1].1, "4");
        assert_eq!(set[2].1, "9000");
        assert_eq!(notes.len(), 2);
        assert!(
            notes[0].contains("thinkmin=idle+1ms = 9000 us (test)"),
            "{}",
            notes[0]
        );
        // No idle value: the device is never read.
        let mut plain = vec![("burst".to_string(), "4".to_string())];
        let notes = resolve_sets(&mut plain, || Err("must not be read".into())).unwrap();
        assert!(notes.is_empty());
        // Below zero, and a device without a window.
        let mut neg = vec![("t".to_string(), "idle-9ms".to_string())];
        assert!(resolve_sets(&mut neg, w)
            .unwrap_err()
            .contains("below zero"));
        let mut none = vec![("t".to_string(), "idle".to_string())];
        let e = resolve_sets(&mut none, || Err("no block device".into())).unwrap_err();
        assert_eq!(e, "-s t=idle: no block device");
        assert_eq!(placeholders(&none)[0].1, "8000");
    }
}
