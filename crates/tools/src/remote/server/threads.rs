//! The server's threads: the reader that answers requests, the replier that sends
//! queued replies at their modelled times, and the control requests of `remote set`.

use super::encode::{cname, Out};
use super::lookaside::load_lookaside;
use super::{Fs, Pending, Shared};
use crate::remote::state::{self, RemoteStats, StateDir};
use fsbench_base::daemon::state::{read_json, write_json_atomic};
use fsbench_base::fuse::abi::{after, parse, FhIn, OpenIn, ReadIn, WriteIn};
use fsbench_base::fuse::{
    histogram_pairs, next_request, precise_timer_slack, realtime, reply, reply_init, split_request,
    to_us, Sleeper, FUSE_ACCESS, FUSE_ASYNC_READ, FUSE_BATCH_FORGET, FUSE_BIG_WRITES, FUSE_CREATE,
    FUSE_DESTROY, FUSE_FLUSH, FUSE_FORGET, FUSE_FSYNC, FUSE_FSYNCDIR, FUSE_GETATTR, FUSE_INIT,
    FUSE_INTERRUPT, FUSE_LINK, FUSE_LOOKUP, FUSE_MAX_PAGES, FUSE_MKDIR, FUSE_MKNOD, FUSE_OPEN,
    FUSE_OPENDIR, FUSE_READ, FUSE_READDIR, FUSE_READLINK, FUSE_RELEASE, FUSE_RELEASEDIR,
    FUSE_REMOVEXATTR, FUSE_RENAME, FUSE_RENAME2, FUSE_RMDIR, FUSE_SETATTR, FUSE_SETXATTR,
    FUSE_STATFS, FUSE_SYMLINK, FUSE_UNLINK, FUSE_WRITE, MAX_WRITE, RT_PRIORITY,
};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(super) fn opcode_name(op: u32) -> &'static str {
    match op {
        FUSE_LOOKUP => "lookup",
        FUSE_GETATTR => "getattr",
        FUSE_SETATTR => "setattr",
        FUSE_READLINK => "readlink",
        FUSE_MKDIR => "mkdir",
        FUSE_UNLINK => "unlink",
        FUSE_RMDIR => "rmdir",
        FUSE_RENAME | FUSE_RENAME2 => "rename",
        FUSE_OPEN => "open",
        FUSE_READ => "read",
        FUSE_WRITE => "write",
        FUSE_STATFS => "statfs",
        FUSE_RELEASE => "release",
        FUSE_FSYNC => "fsync",
        FUSE_FLUSH => "flush",
        FUSE_OPENDIR => "opendir",
        FUSE_READDIR => "readdir",
        FUSE_RELEASEDIR => "releasedir",
        FUSE_CREATE => "create",
        FUSE_ACCESS => "access",
        FUSE_FORGET | FUSE_BATCH_FORGET => "forget",
        FUSE_INIT => "init",
        _ => "other",
    }
}

pub(super) fn reader_thread(shared: Arc<Shared>, fsm: Arc<Mutex<Fs>>) {
    let _ = realtime(RT_PRIORITY);
    let mut buf = vec![0u8; MAX_WRITE as usize + 64 * 1024];
    let dev = &shared.dev;
    let mut seq = 0u64;
    while let Some(n) = next_request(&shared.dev, &mut buf, "remote server") {
        let arrival = shared.clock.now();
        let Some((h, body)) = split_request(&buf[..n]) else {
            continue;
        };
        let (opcode, unique, nodeid) = (h.opcode, h.unique, h.nodeid);
        shared.count(|s| {
            s.requests += 1;
            *s.requests_by_type
                .entry(opcode_name(opcode).to_string())
                .or_insert(0) += 1;
        });
        let now = arrival;
        let mut fs_ = fsm.lock().unwrap();
        let out = match opcode {
            FUSE_INIT => {
                reply_init(
                    dev,
                    unique,
                    body,
                    FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_MAX_PAGES,
                );
                continue;
            }
            FUSE_FORGET | FUSE_BATCH_FORGET | FUSE_INTERRUPT => continue, // no reply
            FUSE_DESTROY => {
                reply(dev, unique, 0, &[]);
                break;
            }
            _ => fs_.answer(now, opcode, nodeid, body),
        };
        let cache_bytes = fs_.cache_bytes();
        drop(fs_);
        shared.count(|s| s.cache_bytes = cache_bytes);
        send(&shared, &mut seq, unique, arrival, out);
    }
    shared.reader_done.store(true, Ordering::SeqCst);
    shared.wake.notify_one();
}

/// Send a reply now, or queue it for the replier when it is due later.
fn send(shared: &Shared, seq: &mut u64, unique: u64, arrival: f64, out: Out) {
    let dev = &shared.dev;
    match out.due {
        Some(due) if due > shared.clock.now() => {
            *seq += 1;
            shared.queue.lock().unwrap().push(Pending {
                due,
                arrival,
                seq: *seq,
                unique,
                error: out.error,
                data: out.data,
            });
            shared.wake.notify_one();
        }
        Some(due) => {
            // Already due (the real work took longer than the model): send, count it late.
            reply(dev, unique, out.error, &[&out.data]);
            record_reply(shared, arrival, due);
        }
        None => reply(dev, unique, out.error, &[&out.data]),
    }
}

impl Fs {
    /// The reply to a request the file system answers (all but INIT, FORGET, INTERRUPT
    /// and DESTROY).
    fn answer(&mut self, now: f64, opcode: u32, nodeid: u64, body: &[u8]) -> Out {
        match opcode {
            FUSE_LOOKUP => self.lookup(now, nodeid, cname(body)),
            FUSE_GETATTR => self.getattr(now, nodeid),
            FUSE_SETATTR => self.setattr(now, nodeid, body),
            FUSE_READLINK => self.readlink(now, nodeid),
            FUSE_UNLINK => self.remove(now, nodeid, cname(body), false),
            FUSE_RMDIR => self.remove(now, nodeid, cname(body), true),
            FUSE_CREATE => self.create(now, nodeid, body),
            FUSE_MKDIR => self.mkdir(now, nodeid, body),
            FUSE_RENAME => self.rename(now, nodeid, body, false),
            FUSE_RENAME2 => self.rename(now, nodeid, body, true),
            FUSE_OPENDIR => self.opendir(nodeid),
            FUSE_FSYNCDIR | FUSE_ACCESS => Out::now(Vec::new()),
            FUSE_STATFS => self.statfs(),
            FUSE_MKNOD | FUSE_SYMLINK | FUSE_LINK | FUSE_SETXATTR | FUSE_REMOVEXATTR => {
                Out::err(if self.writable {
                    libc::EPERM
                } else {
                    libc::EROFS
                })
            }
            _ => self
                .answer_on_handle(now, opcode, nodeid, body)
                .unwrap_or(Out::err(libc::EINVAL)),
        }
    }

    /// The replies to requests on an open file or directory (its handle first in the
    /// body); None when the body is too short for its structure.
    fn answer_on_handle(&mut self, now: f64, opcode: u32, nodeid: u64, body: &[u8]) -> Option<Out> {
        let fh = || parse::<FhIn>(body).map(|f| f.fh);
        Some(match opcode {
            FUSE_OPEN => self.open(now, nodeid, parse::<OpenIn>(body)?.flags),
            FUSE_READ => {
                let r = parse::<ReadIn>(body)?;
                self.read(now, r.fh, r.offset, r.size)
            }
            FUSE_WRITE => {
                let w = parse::<WriteIn>(body)?;
                match after::<WriteIn>(body).get(..w.size as usize) {
                    Some(data) => self.write(now, w.fh, w.offset, data),
                    None => Out::err(libc::EINVAL),
                }
            }
            FUSE_FLUSH => self.flush_or_fsync(now, fh()?, false),
            FUSE_FSYNC => self.flush_or_fsync(now, fh()?, true),
            FUSE_RELEASE => self.release(now, fh()?),
            FUSE_READDIR => {
                let r = parse::<ReadIn>(body)?;
                self.readdir(now, r.fh, r.offset, r.size as usize)
            }
            FUSE_RELEASEDIR => {
                self.dirs.remove(&fh()?);
                Out::now(Vec::new())
            }
            _ => Out::err(libc::ENOSYS),
        })
    }
}

pub(super) fn record_reply(shared: &Shared, arrival: f64, due: f64) {
    let late = (shared.clock.now() - due).max(0.0);
    let mut r = shared.rec.lock().unwrap();
    r.stats.delayed_replies += 1;
    r.stats.network_wait_s += (due - arrival).max(0.0);
    r.stats.late_sum_s += late;
    r.late.saturating_record(to_us(late));
}

pub(super) fn snapshot(shared: &Shared, scheduling: &str, memory_locked: &str) -> RemoteStats {
    let r = shared.rec.lock().unwrap();
    let mut s = r.stats.clone();
    s.uptime_s = shared.clock.now();
    s.late_hist_us = histogram_pairs(&r.late);
    s.scheduling = scheduling.to_string();
    s.memory_locked = memory_locked.to_string();
    // The summary from the histogram, the mean from the exact sum.
    s.since(&RemoteStats::default())
}

/// Carry out the request in `control.json`: empty the client's caches, take a new network,
/// reload the lookaside index, then write the statistics and acknowledge.
pub(super) fn control(
    sd: &StateDir,
    shared: &Shared,
    fsm: &Mutex<Fs>,
    scheduling: &str,
    memory_locked: &str,
) -> anyhow::Result<()> {
    let c: state::Control = read_json(&sd.control())?;
    {
        let mut f = fsm.lock().unwrap();
        if c.drop_cache {
            f.drop_client_cache();
            shared.count(|s| s.cache_drops += 1);
        }
        if let Some(net) = c.net {
            f.net = net;
        }
        if c.reload_lookaside {
            f.lookaside = load_lookaside(sd);
            f.block_lookaside.clear();
        }
        let cache_bytes = f.cache_bytes();
        shared.count(|s| s.cache_bytes = cache_bytes);
    }
    write_json_atomic(&sd.stats(), &snapshot(shared, scheduling, memory_locked))?;
    write_json_atomic(&sd.control_ack(), &c.seq)?;
    Ok(())
}

pub(super) fn replier_thread(
    shared: Arc<Shared>,
    stats_path: PathBuf,
    memory_locked: String,
    sched_out: Arc<Mutex<String>>,
) {
    precise_timer_slack();
    let scheduling = realtime(RT_PRIORITY);
    *sched_out.lock().unwrap() = scheduling.clone();
    let clock = shared.clock;
    let mut sleeper = Sleeper::new(clock);
    let mut last_write = 0.0f64;
    let write_stats = |last: &mut f64| {
        let snap = snapshot(&shared, &scheduling, &memory_locked);
        if let Err(e) = write_json_atomic(&stats_path, &snap) {
            fsbench_base::errln!("fsbench remote server: {e:#}");
        }
        *last = clock.now();
    };
    loop {
        let mut q = shared.queue.lock().unwrap();
        let stopping = shared.stop.load(Ordering::SeqCst);
        let Some(top) = q.peek() else {
            if stopping {
                break;
            }
            let (g, _) = shared
                .wake
                .wait_timeout(q, Duration::from_millis(250))
                .unwrap();
            drop(g);
            if clock.now() - last_write >= 1.0 {
                write_stats(&mut last_write);
            }
            continue;
        };
        let ahead = top.due - clock.now();
        if ahead > 0.002 && !stopping {
            let wait = Duration::from_secs_f64((ahead - 0.001).min(0.25));
            let (g, _) = shared.wake.wait_timeout(q, wait).unwrap();
            drop(g);
            if clock.now() - last_write >= 1.0 {
                write_stats(&mut last_write);
            }
            continue;
        }
        let p = q.pop().expect("peeked");
        drop(q);
        if !stopping {
            sleeper.sleep_until(p.due);
        }
        reply(&shared.dev, p.unique, p.error, &[&p.data]);
        record_reply(&shared, p.arrival, p.due);
        if clock.now() - last_write >= 1.0 {
            write_stats(&mut last_write);
        }
    }
    write_stats(&mut last_write);
}
