//! The disk server: a one-file FUSE file system whose reads and writes are
//! answered when the modelled drive would have finished them.
//!
//! # Why the kernel protocol directly
//! The file system has one file and needs about fifteen opcodes. Speaking
//! `/dev/fuse` ourselves (the structures of `linux/fuse.h`, protocol 7.31)
//! costs a few hundred lines, needs no libfuse, no `fusermount` (root mounts
//! with mount(2)), no system packages, and lets the hot path be one read of
//! the request, one pread/pwrite of the image and one writev of the reply.
//!
//! # Threads
//! * the **reader** reads requests from `/dev/fuse`, answers metadata requests
//!   itself and passes READ/WRITE to the disk thread;
//! * the **disk** thread owns the [`Disk`] model: it picks the next request
//!   (FIFO, or SPTF within the queue depth), asks the model for its service
//!   time, does the real pread/pwrite meanwhile, sleeps until the modelled
//!   completion and replies;
//! * the **main** thread waits for SIGTERM/SIGINT/SIGHUP (blocked in every
//!   thread, taken with `sigtimedwait`) and runs the shutdown.
//!
//! # Lifecycle and failure
//! Start: mount FUSE on `STATE/fuse`, open `STATE/fuse/disk` with O_DIRECT,
//! attach it to a loop device with direct I/O and autoclear, mark it
//! rotational, write `ready.json`. The server keeps the loop device open.
//!
//! Stop (signal): unmount what `create --mount` mounted (lazily if busy),
//! detach the loop device, lazily unmount the FUSE file system, and serve until
//! the kernel closes the connection (at most 30 s if something else still
//! holds the device), then write the final statistics and remove the pid file.
//!
//! Crash: the kernel aborts the FUSE connection when `/dev/fuse` is closed, so
//! I/O on the loop device fails with EIO instead of hanging; with autoclear the
//! loop device detaches by itself once nothing holds it. `disk remove`
//! finishes the job: lazy unmounts and LOOP_CLR_FD.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use hdrhistogram::Histogram;

use fsbench_base::daemon::owned::{self, is_mounted, FileId};
use fsbench_base::daemon::state::write_json_atomic;
use fsbench_base::daemon::Summary;
use fsbench_base::fuse::abi::{
    after, parse, Attr, AttrOut, EntryOut, FallocateIn, OpenOut, ReadIn, SetattrIn, StatfsOut,
    WriteIn, WriteOut,
};
use fsbench_base::fuse::*;
use zerocopy::IntoBytes;

use super::loopdev;
use super::model::{Disk, Op, Service};
use super::state::{self, DiskStats, Ready, StateDir};

const ROOT_INO: u64 = 1;
const FILE_INO: u64 = 2;

fn attr_of(ino: u64, size: u64) -> Attr {
    let (mode, nlink, size) = if ino == ROOT_INO {
        (libc::S_IFDIR | 0o755, 2u32, 0u64)
    } else {
        (libc::S_IFREG | 0o600, 1u32, size)
    };
    Attr {
        ino,
        size,
        blocks: size.div_ceil(512),
        mode,
        nlink,
        blksize: 4096,
        ..Default::default()
    }
}

/// A READ or WRITE on its way to the disk thread.
struct IoReq {
    unique: u64,
    op: Op,
    off: u64,
    len: u32,
    data: Vec<u8>,
    arrival: f64,
}

/// What the disk thread is sent: a request to serve, or a call (SIGUSR1, from a run's probe)
/// to write its statistics now rather than at the next second.
enum ToDisk {
    Io(IoReq),
    WriteStats,
}

/// Per-request recorders of the disk thread.
struct Recorders {
    stats: DiskStats,
    service: Histogram<u64>,
    overhead: Histogram<u64>,
    seek: Histogram<u64>,
    rotation: Histogram<u64>,
    transfer: Histogram<u64>,
    queue: Histogram<u64>,
    late: Histogram<u64>,
    io: Histogram<u64>,
    wake: Histogram<u64>,
}

fn summary(h: &Histogram<u64>) -> Summary {
    if h.is_empty() {
        return Summary::default();
    }
    Summary {
        mean: h.mean(),
        p50: h.value_at_quantile(0.5) as f64,
        p90: h.value_at_quantile(0.9) as f64,
        p99: h.value_at_quantile(0.99) as f64,
        max: h.max() as f64,
    }
}

impl Recorders {
    fn new() -> Recorders {
        Recorders {
            stats: DiskStats::default(),
            service: us_histogram(),
            overhead: us_histogram(),
            seek: us_histogram(),
            rotation: us_histogram(),
            transfer: us_histogram(),
            queue: us_histogram(),
            late: us_histogram(),
            io: us_histogram(),
            wake: us_histogram(),
        }
    }

    fn record(&mut self, req: &IoReq, s: &Service, queued: f64, late: f64, io: f64, wake: f64) {
        let us = to_us;
        let st = &mut self.stats;
        st.requests += 1;
        match req.op {
            Op::Read => {
                st.reads += 1;
                st.read_bytes += req.len as u64;
            }
            Op::Write => {
                st.writes += 1;
                st.write_bytes += req.len as u64;
            }
        }
        st.cache_hits += s.cache_hit as u64;
        st.streamed += s.streamed as u64;
        st.head_travel_cylinders += s.cylinders;
        st.seeks += (s.seek > 0.0) as u64;
        st.busy_s += s.total();
        st.server_late_sum_s += late.max(0.0);
        self.service.saturating_record(us(s.total()));
        self.overhead.saturating_record(us(s.overhead));
        self.seek.saturating_record(us(s.seek));
        self.rotation.saturating_record(us(s.rotation));
        self.transfer.saturating_record(us(s.transfer));
        self.queue.saturating_record(us(queued));
        self.late.saturating_record(us(late));
        self.io.saturating_record(us(io));
        self.wake.saturating_record(us(wake));
    }

    fn snapshot(&self, uptime: f64, fsyncs: u64) -> DiskStats {
        let mut s = self.stats.clone();
        s.uptime_s = uptime;
        s.fsyncs = fsyncs;
        s.service_us = summary(&self.service);
        s.overhead_us = summary(&self.overhead);
        s.seek_us = summary(&self.seek);
        s.rotation_us = summary(&self.rotation);
        s.transfer_us = summary(&self.transfer);
        s.queue_us = summary(&self.queue);
        s.server_late_us = summary(&self.late);
        s.server_io_us = summary(&self.io);
        s.server_wake_us = summary(&self.wake);
        s.server_late_hist_us = histogram_pairs(&self.late);
        s
    }
}

/// Shared between threads.
struct Shared {
    dev: File,
    image: File,
    size: u64,
    clock: Clock,
    fsyncs: AtomicU64,
    reader_done: AtomicBool,
    memory_locked: String,
}

fn disk_thread(
    shared: Arc<Shared>,
    mut disk: Disk,
    rx: mpsc::Receiver<ToDisk>,
    stats_path: std::path::PathBuf,
) {
    precise_timer_slack();
    let scheduling = realtime(RT_PRIORITY);
    let clock = shared.clock;
    let mut sleeper = Sleeper::new(clock);
    let qd = disk.params.queue_depth.max(1) as usize;
    let mut pending: VecDeque<IoReq> = VecDeque::new();
    let mut rec = Recorders::new();
    let mut prev_done = 0.0f64;
    let mut last_write = 0.0f64;
    let mut buf: Vec<u8> = Vec::with_capacity(MAX_WRITE as usize);
    let mut on_request = 0u64;
    let write_stats = |rec: &Recorders, on_request: u64| {
        let mut snap = rec.snapshot(clock.now(), shared.fsyncs.load(Ordering::Relaxed));
        snap.written_on_request = on_request;
        snap.scheduling = scheduling.clone();
        snap.memory_locked = shared.memory_locked.clone();
        if let Err(e) = write_json_atomic(&stats_path, &snap) {
            fsbench_base::errln!("fsbench disk server: {e:#}");
        }
    };
    loop {
        if pending.is_empty() {
            match rx.recv_timeout(Duration::from_secs(1)) {
                Ok(ToDisk::Io(r)) => pending.push_back(r),
                Ok(ToDisk::WriteStats) => {
                    on_request += 1;
                    write_stats(&rec, on_request);
                    last_write = clock.now();
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    write_stats(&rec, on_request);
                    last_write = clock.now();
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        while let Ok(m) = rx.try_recv() {
            match m {
                ToDisk::Io(r) => pending.push_back(r),
                // Every request replied to so far is in them; those queued are not yet.
                ToDisk::WriteStats => {
                    on_request += 1;
                    write_stats(&rec, on_request);
                    last_write = clock.now();
                }
            }
        }
        // Pick the next request: FIFO, or the shortest positioning time among
        // the `qd` oldest.
        let idx = pick(&disk, &pending, qd, prev_done);
        let req = pending.remove(idx).expect("index within queue");
        let start = req.arrival.max(prev_done);
        let svc = disk.serve(req.op, req.off, req.len as u64, start);
        let done = start + svc.total();

        // The real I/O happens while the modelled drive is busy.
        let t_io = clock.now();
        let (errno, n) = image_io(&shared, &req, &mut buf);
        let io = clock.now() - t_io;
        sleeper.sleep_until(done);
        let wake = clock.now() - done;
        if errno != 0 {
            reply_err(&shared.dev, req.unique, errno);
        } else {
            match req.op {
                Op::Read => reply(&shared.dev, req.unique, 0, &[&buf[..n]]),
                Op::Write => {
                    let out = WriteOut {
                        size: n as u32,
                        padding: 0,
                    };
                    reply(&shared.dev, req.unique, 0, &[out.as_bytes()]);
                }
            }
        }
        let late = clock.now() - done;
        rec.record(&req, &svc, start - req.arrival, late, io, wake);
        prev_done = done;
        let now = clock.now();
        if now - last_write >= 1.0 {
            write_stats(&rec, on_request);
            last_write = now;
        }
    }
    write_stats(&rec, on_request);
}

/// The next request to serve: the oldest, or with a queue depth over one the shortest
/// positioning time among the `qd` oldest.
fn pick(disk: &Disk, pending: &VecDeque<IoReq>, qd: usize, prev_done: f64) -> usize {
    if qd > 1 && pending.len() > 1 {
        let mut best = (f64::INFINITY, 0);
        for (i, r) in pending.iter().take(qd).enumerate() {
            let start = r.arrival.max(prev_done);
            let t = disk.positioning_estimate(r.op, r.off, r.len as u64, start);
            if t < best.0 {
                best = (t, i);
            }
        }
        best.1
    } else {
        0
    }
}

/// The real I/O of a request on the image: (errno, bytes); a read's data lands in `buf`.
fn image_io(shared: &Shared, req: &IoReq, buf: &mut Vec<u8>) -> (i32, usize) {
    match req.op {
        Op::Read => {
            let len = (req.len as u64).min(shared.size.saturating_sub(req.off)) as usize;
            buf.resize(len, 0);
            match read_full_at(&shared.image, buf, req.off) {
                Ok(n) => (0, n),
                Err(e) => (e.raw_os_error().unwrap_or(libc::EIO), 0),
            }
        }
        Op::Write => match shared.image.write_all_at(&req.data, req.off) {
            Ok(()) => (0, req.data.len()),
            Err(e) => (e.raw_os_error().unwrap_or(libc::EIO), 0),
        },
    }
}

fn reader_thread(shared: Arc<Shared>, tx: mpsc::Sender<ToDisk>) {
    let _ = realtime(RT_PRIORITY);
    let mut buf = vec![0u8; MAX_WRITE as usize + 64 * 1024];
    let r = Reader {
        shared: &shared,
        dev: &shared.dev,
        tx,
    };
    while let Some(n) = next_request(&shared.dev, &mut buf, "disk server") {
        let arrival = shared.clock.now();
        let Some((h, body)) = split_request(&buf[..n]) else {
            continue;
        };
        let req = Request {
            opcode: h.opcode,
            unique: h.unique,
            nodeid: h.nodeid,
            body,
        };
        if !r.answer(&req, arrival) {
            break;
        }
    }
    shared.reader_done.store(true, Ordering::SeqCst);
}

/// One request read from /dev/fuse.
struct Request<'a> {
    opcode: u32,
    unique: u64,
    nodeid: u64,
    body: &'a [u8],
}

/// The reader's side of the file system: metadata answered at once, I/O passed on to
/// the disk thread.
struct Reader<'a> {
    shared: &'a Shared,
    dev: &'a File,
    tx: mpsc::Sender<ToDisk>,
}

impl Reader<'_> {
    /// Answer (or pass on) one request; false after DESTROY.
    fn answer(&self, q: &Request, arrival: f64) -> bool {
        let (dev, unique, body) = (self.dev, q.unique, q.body);
        match q.opcode {
            FUSE_INIT => {
                reply_init(
                    dev,
                    unique,
                    body,
                    FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_ASYNC_DIO | FUSE_MAX_PAGES,
                );
            }
            FUSE_LOOKUP => self.lookup(q),
            FUSE_GETATTR | FUSE_SETATTR => self.attr(q),
            FUSE_OPEN | FUSE_OPENDIR => {
                let mut out = OpenOut::default();
                if q.opcode == FUSE_OPEN {
                    // Every open bypasses the page cache of the FUSE file:
                    // the model must see every request.
                    out.open_flags = FOPEN_DIRECT_IO;
                }
                reply(dev, unique, 0, &[out.as_bytes()]);
            }
            FUSE_READ | FUSE_WRITE => self.io(q, arrival),
            FUSE_FSYNC | FUSE_FSYNCDIR => self.fsync(q),
            FUSE_FLUSH | FUSE_RELEASE | FUSE_RELEASEDIR | FUSE_ACCESS => {
                reply(dev, unique, 0, &[]);
            }
            FUSE_READDIR => self.readdir(q),
            FUSE_STATFS => self.statfs(q),
            FUSE_FALLOCATE => self.fallocate(q),
            FUSE_FORGET | FUSE_BATCH_FORGET | FUSE_INTERRUPT => {} // no reply
            FUSE_DESTROY => {
                reply(dev, unique, 0, &[]);
                return false;
            }
            _ => reply_err(dev, unique, libc::ENOSYS),
        }
        true
    }

    fn readdir(&self, q: &Request) {
        let Some(r) = parse::<ReadIn>(q.body) else {
            return reply_err(self.dev, q.unique, libc::EINVAL);
        };
        let entries: [(u64, &[u8], u32); 3] = [
            (ROOT_INO, b".", libc::DT_DIR as u32),
            (ROOT_INO, b"..", libc::DT_DIR as u32),
            (FILE_INO, state::FUSE_FILE.as_bytes(), libc::DT_REG as u32),
        ];
        let out = dirents(entries, r.offset, r.size as usize);
        reply(self.dev, q.unique, 0, &[&out]);
    }

    fn lookup(&self, q: &Request) {
        let name = q.body.split(|&c| c == 0).next().unwrap_or(&[]);
        if q.nodeid == ROOT_INO && name == state::FUSE_FILE.as_bytes() {
            let out = EntryOut {
                nodeid: FILE_INO,
                generation: 1,
                entry_valid: 3600,
                attr_valid: 3600,
                attr: attr_of(FILE_INO, self.shared.size),
                ..Default::default()
            };
            reply(self.dev, q.unique, 0, &[out.as_bytes()]);
        } else {
            reply_err(self.dev, q.unique, libc::ENOENT);
        }
    }

    /// GETATTR, and SETATTR that changes nothing the disk has (its size is fixed).
    fn attr(&self, q: &Request) {
        let (dev, unique, size) = (self.dev, q.unique, self.shared.size);
        let resizes = |s: SetattrIn| s.valid & FATTR_SIZE != 0 && s.size != size;
        if q.opcode == FUSE_SETATTR && parse::<SetattrIn>(q.body).is_some_and(resizes) {
            // The disk has a fixed size.
            reply_err(dev, unique, libc::EPERM);
            return;
        }
        if q.nodeid != ROOT_INO && q.nodeid != FILE_INO {
            reply_err(dev, unique, libc::ENOENT);
            return;
        }
        let out = AttrOut {
            attr_valid: 3600,
            attr: attr_of(q.nodeid, size),
            ..Default::default()
        };
        reply(dev, unique, 0, &[out.as_bytes()]);
    }

    /// READ and WRITE go to the disk thread, which replies when the drive is done.
    fn io(&self, q: &Request, arrival: f64) {
        let (dev, unique, size) = (self.dev, q.unique, self.shared.size);
        if q.nodeid != FILE_INO {
            reply_err(dev, unique, libc::EISDIR);
            return;
        }
        // READ's and WRITE's structures agree on where the offset and the size are.
        let Some(r) = parse::<ReadIn>(q.body) else {
            return reply_err(dev, unique, libc::EINVAL);
        };
        let (off, len) = (r.offset, r.size);
        let (op, data) = if q.opcode == FUSE_READ {
            (Op::Read, Vec::new())
        } else {
            let data = after::<WriteIn>(q.body)
                .get(..len as usize)
                .unwrap_or(&[])
                .to_vec();
            if data.len() != len as usize || off + len as u64 > size {
                reply_err(
                    dev,
                    unique,
                    if data.len() != len as usize {
                        libc::EINVAL
                    } else {
                        libc::ENOSPC
                    },
                );
                return;
            }
            (Op::Write, data)
        };
        if op == Op::Read && off >= size {
            reply(dev, unique, 0, &[]);
            return;
        }
        let req = IoReq {
            unique,
            op,
            off,
            len,
            data,
            arrival,
        };
        if self.tx.send(ToDisk::Io(req)).is_err() {
            reply_err(dev, unique, libc::EIO);
        }
    }

    /// fsync reaches the image file.
    fn fsync(&self, q: &Request) {
        let r = if q.opcode == FUSE_FSYNC {
            self.shared.fsyncs.fetch_add(1, Ordering::Relaxed);
            self.shared.image.sync_data()
        } else {
            Ok(())
        };
        match r {
            Ok(()) => reply(self.dev, q.unique, 0, &[]),
            Err(e) => reply_err(self.dev, q.unique, e.raw_os_error().unwrap_or(libc::EIO)),
        }
    }

    fn statfs(&self, q: &Request) {
        let out = StatfsOut {
            blocks: self.shared.size / 4096,
            files: 2,
            bsize: 4096,
            namelen: 255,
            frsize: 4096,
            ..Default::default()
        };
        reply(self.dev, q.unique, 0, &[out.as_bytes()]);
    }

    /// Discard from the loop device: punch the hole in the image (keeps it sparse); a
    /// drive does this without media time.
    fn fallocate(&self, q: &Request) {
        let Some(f) = parse::<FallocateIn>(q.body) else {
            return reply_err(self.dev, q.unique, libc::EINVAL);
        };
        let (off, len, mode) = (f.offset as i64, f.length as i64, f.mode as i32);
        // SAFETY: plain fallocate on a file descriptor we own.
        let r = unsafe { libc::fallocate(self.shared.image.as_raw_fd(), mode, off, len) };
        if r == 0 {
            reply(self.dev, q.unique, 0, &[]);
        } else {
            let e = io::Error::last_os_error();
            reply_err(self.dev, q.unique, e.raw_os_error().unwrap_or(libc::EIO));
        }
    }
}

/// `fsbench disk serve NAME`: run the server in the foreground (`disk create`
/// starts it in the background).
pub fn serve(name: &str) -> anyhow::Result<()> {
    let sd = StateDir::new(name)?;
    let cfg = sd.read_config()?;
    // SIGUSR1 asks for the statistics now (see `ToDisk::WriteStats`).
    let sigset = block_signals_with(&[libc::SIGUSR1]);
    std::env::set_current_dir("/").ok();

    let disk = Disk::new(cfg.params.clone(), cfg.size).map_err(anyhow::Error::msg)?;
    let (image, size) = open_image(&cfg)?;
    sd.write_pid()?;
    let fuse_dir = sd.fuse_dir();
    let dev = mount_own_fuse(&sd, &fuse_dir)?;
    let shared = Arc::new(Shared {
        dev,
        image,
        size,
        clock: Clock(Instant::now()),
        fsyncs: AtomicU64::new(0),
        reader_done: AtomicBool::new(false),
        memory_locked: lock_memory(),
    });
    let (tx, rx) = mpsc::channel();
    let stats_tx = tx.clone();
    let cylinders = disk.cylinders;
    let stats_path = sd.stats();
    let sh = shared.clone();
    let disk_t = thread::Builder::new()
        .name("disk".into())
        .spawn(move || disk_thread(sh, disk, rx, stats_path))?;
    let sh = shared.clone();
    let reader_t = thread::Builder::new()
        .name("fuse-reader".into())
        .spawn(move || reader_thread(sh, tx))?;

    let (lo, backing_id) = match attach_loop(&sd, &cfg) {
        Ok(lo) => lo,
        Err(e) => {
            lazy_unmount(&fuse_dir).ok();
            sd.clear_running();
            return Err(e);
        }
    };
    let device = lo.path();
    let ready = Ready {
        device: device.clone(),
        pid: std::process::id() as i32,
        direct_io: lo.direct_io(),
        cylinders,
        backing: Some(backing_id),
        stats_on_request: true,
        found_queue: lo.found.clone(),
    };
    write_json_atomic(&sd.ready(), &ready)?;
    fsbench_base::errln!(
        "fsbench disk server {name}: {device} backed by {} ({} bytes, direct I/O {})",
        cfg.image.display(),
        size,
        if ready.direct_io { "on" } else { "off" }
    );

    let sig = wait_for_stop(&shared, &sigset, &stats_tx);
    // The disk thread ends when every sender is gone (the reader's goes at DESTROY).
    drop(stats_tx);
    fsbench_base::errln!(
        "fsbench disk server {name}: stopping ({})",
        stop_reason(sig)
    );
    shut_down(&sd, lo, &fuse_dir, &shared, name, &device);
    let _ = reader_t.join();
    let _ = disk_t.join();
    sd.clear_running();
    fsbench_base::errln!("fsbench disk server {name}: stopped");
    Ok(())
}

/// The image file, checked to have the configured size.
fn open_image(cfg: &state::DiskConfig) -> anyhow::Result<(File, u64)> {
    let image = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&cfg.image)
        .with_context(|| format!("opening image {}", cfg.image.display()))?;
    let size = image.metadata()?.len();
    if size != cfg.size {
        bail!(
            "image {} is {size} bytes, expected {}",
            cfg.image.display(),
            cfg.size
        );
    }
    Ok((image, size))
}

/// Mount the FUSE file system on `fuse_dir`, after clearing a crashed server's mount
/// there (and only such a mount).
fn mount_own_fuse(sd: &StateDir, fuse_dir: &std::path::Path) -> anyhow::Result<File> {
    std::fs::create_dir_all(fuse_dir)?;
    if is_mounted(fuse_dir) {
        // A previous server's mount, left by a crash; anything else there is not ours.
        if !owned::is_own_fuse(fuse_dir, "fsbench-disk") {
            sd.clear_running();
            bail!(
                "{} holds a mount that is not a disk server's; not unmounting it",
                fuse_dir.display()
            );
        }
        lazy_unmount(fuse_dir).ok();
    }
    mount_fuse(fuse_dir, "fsbench-disk")
}

/// Attach the FUSE file (opened with O_DIRECT) to a loop device with direct I/O and
/// autoclear, marked rotational.
fn attach_loop(
    sd: &StateDir,
    cfg: &state::DiskConfig,
) -> anyhow::Result<(loopdev::LoopDevice, FileId)> {
    let fuse_file = sd.fuse_file();
    let backing = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&fuse_file)
        .with_context(|| format!("opening {}", fuse_file.display()))?;
    let backing_id = FileId::of(&backing.metadata()?);
    let lo = loopdev::attach(
        &backing,
        loopdev::LO_FLAGS_DIRECT_IO | loopdev::LO_FLAGS_AUTOCLEAR,
        &cfg.image.to_string_lossy(),
    )
    .context("attaching a loop device")?;
    drop(backing);
    let path = lo.path();
    loopdev::set_queue_attr(&path, "rotational", "1")?;
    Ok((lo, backing_id))
}

/// Set the detached loop device back as the server found it, saying so where it cannot.
fn set_back(found: &loopdev::QueueFound, device: &str) {
    if let Err(e) = found.restore_detached(device) {
        fsbench_base::errln!(
            "fsbench disk server: setting the queue of {device} back as it was found: {e}"
        );
    }
}

/// Serve until a signal comes (returned) or the FUSE connection goes away.
fn wait_for_stop(
    shared: &Shared,
    sigset: &libc::sigset_t,
    stats: &mpsc::Sender<ToDisk>,
) -> Option<i32> {
    loop {
        if shared.reader_done.load(Ordering::SeqCst) {
            return None;
        }
        match wait_signal(sigset, Duration::from_millis(500)) {
            Some(libc::SIGUSR1) => {
                let _ = stats.send(ToDisk::WriteStats);
            }
            Some(s) => return Some(s),
            None => {}
        }
    }
}

/// Shutdown: our mount (re-read: `create --mount` records it after we started), the loop
/// device, the FUSE mount; then wait up to 30 s for the kernel to close the connection,
/// and exit at once if it does not.
fn shut_down(
    sd: &StateDir,
    lo: loopdev::LoopDevice,
    fuse_dir: &std::path::Path,
    shared: &Shared,
    name: &str,
    device: &str,
) {
    // Only the mount `create` recorded: after a hand-made unmount, whatever was mounted at
    // the same point since is someone else's.
    if let Some(m) = sd.read_config().ok().and_then(|c| c.mount_record) {
        if let Err(e) = m.unmount_even_busy() {
            fsbench_base::errln!("fsbench disk server: {e:#}");
        }
    }
    if let Err(e) = loopdev::detach_fd(&lo.file) {
        fsbench_base::errln!("fsbench disk server: detaching {device}: {e}");
    }
    let found = lo.found.clone();
    // The last opener gone, the kernel detaches the device (autoclear).
    drop(lo);
    if let Some(found) = found {
        set_back(&found, device);
    }
    lazy_unmount(fuse_dir).ok();
    if !connection_closed(&shared.reader_done, Duration::from_secs(30)) {
        fsbench_base::errln!(
            "fsbench disk server {name}: {device} is still in use (mounted elsewhere?); \
             exiting anyway, its users will see I/O errors"
        );
        sd.clear_running();
        std::process::exit(0);
    }
}
