//! A relay between a libnfs client and the NFS server, in fsbench's own process: it stands
//! on two loopback ports in place of the server's NFS and MOUNT ports (libnfs is pointed at
//! them by the URL's `nfsport=` and `mountport=`), forwards every RPC message, and on the
//! way
//!
//! - dials a network: each message waits for the link (one each way, shared in FIFO order
//!   by every connection of the run, as a client machine's network interface is), crosses
//!   it at the link's bandwidth and arrives half a round trip later (the names and meaning
//!   of `fsbench remote create`'s `--bandwidth` and `--rtt`);
//! - counts the calls per flowop and procedure, their time and bytes ([`super::rpc`]).
//!
//! One relay serves one worker's client, so every call it sees is that worker's. Messages
//! are stored whole and forwarded whole (store and forward): a synchronous client has one
//! call in flight, for which this is exact.

use super::rpc::{self, Counts, Header, ProcCount};
use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A network's parameters, as the simulated remote's model names them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Bits per second each way; infinite for no limit.
    pub bandwidth_bps: f64,
    /// Round-trip time, seconds: half of it on the way out, half on the way back.
    pub rtt_s: f64,
}

impl Link {
    fn wire(&self, bytes: usize) -> Duration {
        if self.bandwidth_bps.is_finite() {
            Duration::from_secs_f64(bytes as f64 * 8.0 / self.bandwidth_bps)
        } else {
            Duration::ZERO
        }
    }

    /// As a user writes it: "10 Mbit/s, 10 ms round trip".
    pub fn describe(&self) -> String {
        let bw = if self.bandwidth_bps.is_finite() {
            crate::units::human_bps(self.bandwidth_bps)
        } else {
            "unlimited bandwidth".into()
        };
        format!("{bw}, {} ms round trip", self.rtt_s * 1e3)
    }
}

/// One client machine's network: what every relay of a run shares.
#[derive(Debug)]
pub struct Network {
    /// `None`: no delay, the relay only counts.
    pub link: Option<Link>,
    /// When the link toward the server, and back, is next free.
    up: Mutex<Instant>,
    down: Mutex<Instant>,
}

impl Network {
    pub fn new(link: Option<Link>) -> Arc<Network> {
        let now = Instant::now();
        Arc::new(Network {
            link,
            up: Mutex::new(now),
            down: Mutex::new(now),
        })
    }

    /// When a message of `bytes` that reached the relay at `at` reaches the other end:
    /// after the link is free, its bytes have crossed, and half a round trip.
    fn arrival(&self, up: bool, at: Instant, bytes: usize) -> Instant {
        let Some(l) = self.link else { return at };
        let free = if up { &self.up } else { &self.down };
        let mut free = free.lock().unwrap_or_else(|p| p.into_inner());
        let end = at.max(*free) + l.wire(bytes);
        *free = end;
        end + Duration::from_secs_f64(l.rtt_s / 2.0)
    }
}

/// The server's ports a relay stands in for, read from an NFS URL.
#[derive(Debug, Clone, PartialEq)]
pub struct Ports {
    host: String,
    nfs: u16,
    mount: Option<u16>,
}

/// The URL's `nfsport=` and `mountport=` (a v4 URL needs no MOUNT port): the relay needs
/// them to know where the server is; said before anything is made.
pub fn ports(url: &str) -> Result<Ports, String> {
    let rest = url.strip_prefix("nfs://").unwrap_or(url);
    let host = rest.split(['/', '?']).next().unwrap_or("").to_string();
    let args = url.split_once('?').map(|x| x.1).unwrap_or("");
    let arg = |k: &str| {
        (args.split('&'))
            .find_map(|a| a.strip_prefix(k)?.strip_prefix('='))
            .map(|v| {
                v.parse::<u16>()
                    .map_err(|_| format!("{k}={v} in `{url}` is not a port"))
            })
            .transpose()
    };
    let v4 = arg("version")? == Some(4);
    let what = "counting RPCs or dialling a network (--nfs-rpcs, --nfs-bandwidth, --nfs-rtt) puts a relay between fsbench and the server, which needs the server's ports in the URL";
    let Some(nfs) = arg("nfsport")? else {
        return Err(format!("{what}: add nfsport=PORT{} to `{url}` (`fsbench nfs list` shows them for a server it started)", if v4 { "" } else { "&mountport=PORT" }));
    };
    let mount = arg("mountport")?;
    if mount.is_none() && !v4 {
        return Err(format!("{what}: add mountport=PORT to `{url}` (`fsbench nfs list` shows it for a server it started)"));
    }
    Ok(Ports { host, nfs, mount })
}

/// A URL with `nfsport`/`mountport` replaced and the server made 127.0.0.1.
fn redirect(url: &str, nfs: u16, mount: Option<u16>) -> String {
    let rest = url.strip_prefix("nfs://").unwrap_or(url);
    let (before, args) = rest.split_once('?').unwrap_or((rest, ""));
    let path = before.split_once('/').map(|x| x.1).unwrap_or("");
    let mut out: Vec<String> = (args.split('&'))
        .filter(|a| !a.is_empty() && !a.starts_with("nfsport=") && !a.starts_with("mountport="))
        .map(String::from)
        .collect();
    out.push(format!("nfsport={nfs}"));
    if let Some(m) = mount {
        out.push(format!("mountport={m}"));
    }
    format!("nfs://127.0.0.1/{path}?{}", out.join("&"))
}

/// A connection's calls awaiting their replies, by xid: (statistic + 1, procedure id, when
/// the call reached the relay, its bytes).
type Pending = Mutex<HashMap<u32, (usize, usize, Instant, usize)>>;

/// One relayed connection: both sockets (shut down to stop it) and its threads.
struct Conn {
    sockets: [TcpStream; 2],
    threads: Vec<JoinHandle<()>>,
}

/// What a relay's threads share.
struct Shared {
    net: Arc<Network>,
    counts: Arc<Counts>,
    stop: AtomicBool,
    conns: Mutex<Vec<Conn>>,
}

/// A relay for one client: listening until dropped, which stops and joins everything.
pub struct Relay {
    url: String,
    shared: Arc<Shared>,
    listeners: Vec<(TcpListener, JoinHandle<()>)>,
}

impl Relay {
    /// Listen on loopback in place of the server `url` names, counting into `counts`.
    pub fn start(url: &str, net: Arc<Network>, counts: Arc<Counts>) -> Result<Relay, String> {
        let p = ports(url)?;
        let shared = Arc::new(Shared {
            net,
            counts,
            stop: AtomicBool::new(false),
            conns: Mutex::new(Vec::new()),
        });
        let mut relay = Relay {
            url: String::new(),
            shared,
            listeners: Vec::new(),
        };
        let nfs = relay.listen(&p.host, p.nfs)?;
        let mount = match p.mount {
            Some(m) => Some(relay.listen(&p.host, m)?),
            None => None,
        };
        relay.url = redirect(url, nfs, mount);
        Ok(relay)
    }

    /// The URL that sends libnfs to this relay.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Listen on a free loopback port for the server's `host:port`; returns the port.
    fn listen(&mut self, host: &str, port: u16) -> Result<u16, String> {
        let server = (host, port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| format!("cannot resolve the NFS server {host}:{port}"))?;
        let l = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| format!("the NFS relay cannot listen on 127.0.0.1: {e}"))?;
        let mine = l.local_addr().map_err(|e| e.to_string())?.port();
        let theirs = l.try_clone().map_err(|e| e.to_string())?;
        let shared = self.shared.clone();
        let t = std::thread::Builder::new()
            .name("nfs-relay".into())
            .spawn(move || accept(theirs, server, shared))
            .map_err(|e| format!("cannot start the NFS relay's thread: {e}"))?;
        self.listeners.push((l, t));
        Ok(mine)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for (l, t) in self.listeners.drain(..) {
            // SAFETY: a listening socket we own; shutting it down wakes its accept.
            unsafe { libc::shutdown(l.as_raw_fd(), libc::SHUT_RDWR) };
            let _ = t.join();
        }
        let conns =
            std::mem::take(&mut *self.shared.conns.lock().unwrap_or_else(|p| p.into_inner()));
        for c in conns {
            for s in &c.sockets {
                let _ = s.shutdown(Shutdown::Both);
            }
            for t in c.threads {
                let _ = t.join();
            }
        }
    }
}

/// Accept the client's connections until the relay stops, each relayed to `server`.
fn accept(l: TcpListener, server: SocketAddr, shared: Arc<Shared>) {
    for c in l.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(c) = c else { continue };
        let Ok(s) = TcpStream::connect(server) else {
            let _ = c.shutdown(Shutdown::Both);
            continue;
        };
        if let Err(e) = relay_conn(c, s, &shared) {
            crate::errln!("fsbench: the NFS relay dropped a connection: {e}");
        }
    }
}

/// Start both directions of one connection.
fn relay_conn(c: TcpStream, s: TcpStream, shared: &Arc<Shared>) -> io::Result<()> {
    c.set_nodelay(true)?;
    s.set_nodelay(true)?;
    let pending: Arc<Pending> = Arc::default();
    let mut threads = Vec::new();
    for up in [true, false] {
        let (from, to) = if up { (&c, &s) } else { (&s, &c) };
        let started = (from.try_clone().and_then(|f| Ok((f, to.try_clone()?))))
            .and_then(|(from, to)| direction(up, from, to, shared.clone(), pending.clone()));
        match started {
            Ok(t) => threads.extend(t),
            Err(e) => {
                // The direction already started ends when its sockets do.
                let _ = (c.shutdown(Shutdown::Both), s.shutdown(Shutdown::Both));
                for t in threads {
                    let _ = t.join();
                }
                return Err(e);
            }
        }
    }
    let mut conns = shared.conns.lock().unwrap_or_else(|p| p.into_inner());
    if shared.stop.load(Ordering::SeqCst) {
        let _ = (c.shutdown(Shutdown::Both), s.shutdown(Shutdown::Both));
    }
    conns.push(Conn {
        sockets: [c, s],
        threads,
    });
    Ok(())
}

/// One direction: a reader, and (with a link) a writer that holds each message until it
/// arrives. Without a link the reader writes at once.
fn direction(
    up: bool,
    from: TcpStream,
    to: TcpStream,
    sh: Arc<Shared>,
    pd: Arc<Pending>,
) -> io::Result<Vec<JoinHandle<()>>> {
    let spawn = |f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(if up { "nfs-relay-up" } else { "nfs-relay-down" }.into())
            .spawn(f)
    };
    if sh.net.link.is_none() {
        let mut out = Out {
            up,
            to,
            sh: sh.clone(),
            pd: pd.clone(),
        };
        return Ok(vec![spawn(Box::new(move || {
            read_all(up, from, &sh, &pd, |m, _| out.deliver(&m));
            // The other end learns the stream ended (the sockets live on in the relay).
            let _ = out.to.shutdown(Shutdown::Write);
        }))?]);
    }
    let (tx, rx) = mpsc::channel::<(Vec<u8>, Instant)>();
    let mut out = Out {
        up,
        to,
        sh: sh.clone(),
        pd: pd.clone(),
    };
    let writer = spawn(Box::new(move || {
        for (m, when) in rx {
            let now = Instant::now();
            if when > now {
                std::thread::sleep(when - now);
            }
            if out.deliver(&m).is_err() {
                break;
            }
        }
        let _ = out.to.shutdown(Shutdown::Write);
    }))?;
    let reader = spawn(Box::new(move || {
        read_all(up, from, &sh, &pd, |m, when| {
            tx.send((m, when))
                .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
        })
    }))?;
    Ok(vec![reader, writer])
}

/// Read every message from `from`, note each call, and hand each on with when it arrives.
fn read_all(
    up: bool,
    mut from: TcpStream,
    sh: &Shared,
    pd: &Pending,
    mut on: impl FnMut(Vec<u8>, Instant) -> io::Result<()>,
) {
    while let Ok(Some(m)) = rpc::read_record(&mut from) {
        let at = Instant::now();
        if let (true, Some(Header::Call { xid, proc })) = (up, rpc::head(&m)) {
            let stat = sh.counts.current();
            let mut p = pd.lock().unwrap_or_else(|p| p.into_inner());
            p.insert(xid, (stat, proc, at, m.len()));
        }
        let when = sh.net.arrival(up, at, m.len());
        if on(m, when).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Read);
}

/// Where a direction's messages go: a reply delivered to the client completes its call.
struct Out {
    up: bool,
    to: TcpStream,
    sh: Arc<Shared>,
    pd: Arc<Pending>,
}

impl Out {
    /// Forward `m`; a reply is counted first, so that the client, woken by it, finds its
    /// call counted (the last call of a run included).
    fn deliver(&mut self, m: &[u8]) -> io::Result<()> {
        if !self.up {
            self.count(m);
        }
        let r = self.to.write_all(m);
        if r.is_err() && !self.up {
            let _ = self.to.shutdown(Shutdown::Write);
        }
        r
    }

    fn count(&self, m: &[u8]) {
        if let Some(Header::Reply { xid }) = rpc::head(m) {
            let call = self
                .pd
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&xid);
            if let Some((stat, proc, t0, bytes)) = call {
                let c = ProcCount {
                    calls: 1,
                    ns: t0.elapsed().as_nanos() as u64,
                    bytes: (bytes + m.len()) as u64,
                };
                self.sh.counts.add(stat, proc, c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_pointed_at_the_relay() {
        let u = "nfs://10.0.0.2/srv/x?version=3&nfsport=2049&mountport=20048&uid=0";
        let p = ports(u).unwrap();
        assert_eq!(
            (p.host.as_str(), p.nfs, p.mount),
            ("10.0.0.2", 2049, Some(20048))
        );
        assert_eq!(
            redirect(u, 4000, Some(4001)),
            "nfs://127.0.0.1/srv/x?version=3&uid=0&nfsport=4000&mountport=4001"
        );
        assert!(ports("nfs://h/x?version=3")
            .unwrap_err()
            .contains("nfsport=PORT"));
        assert!(ports("nfs://h/x?nfsport=2049")
            .unwrap_err()
            .contains("mountport"));
        assert_eq!(
            ports("nfs://h/x?nfsport=2049&version=4").unwrap().mount,
            None
        );
        assert!(ports("nfs://h/x?nfsport=x&mountport=1").is_err());
    }

    /// A server answering every call with a bare reply of the same xid.
    fn fake_server() -> (u16, std::thread::JoinHandle<()>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let t = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            while let Ok(Some(m)) = rpc::read_record(&mut c) {
                let mut reply = vec![0x80, 0, 0, 8];
                reply.extend_from_slice(&m[4..8]);
                reply.extend_from_slice(&1u32.to_be_bytes());
                if c.write_all(&reply).is_err() {
                    break;
                }
            }
        });
        (port, t)
    }

    fn call(xid: u32, proc: u32) -> Vec<u8> {
        let mut m = vec![0x80, 0, 0, 24];
        for w in [xid, 0, 2, 100_003, 3, proc] {
            m.extend_from_slice(&w.to_be_bytes());
        }
        m
    }

    #[test]
    fn a_relay_counts_calls_and_leaves_nothing_when_dropped() {
        let (port, server) = fake_server();
        let counts = Arc::<Counts>::default();
        let url = format!("nfs://127.0.0.1/x?nfsport={port}&mountport={port}");
        let net = Network::new(Some(Link {
            bandwidth_bps: f64::INFINITY,
            rtt_s: 0.004,
        }));
        let relay = Relay::start(&url, net, counts.clone()).unwrap();
        let mine = ports(relay.url()).unwrap().nfs;
        let mut c = TcpStream::connect(("127.0.0.1", mine)).unwrap();
        counts.begin(3);
        let t0 = Instant::now();
        for xid in 1..=5 {
            c.write_all(&call(xid, 1)).unwrap();
            let r = rpc::read_record(&mut c).unwrap().unwrap();
            assert_eq!(rpc::head(&r), Some(Header::Reply { xid }));
        }
        assert!(
            t0.elapsed() >= Duration::from_millis(20),
            "5 round trips of 4 ms"
        );
        let t = counts.take();
        assert_eq!(t[3][1].calls, 5, "five GETATTRs");
        assert!(t[3][1].ns >= 20_000_000);
        drop(c);
        drop(relay);
        server.join().unwrap();
        assert!(
            TcpStream::connect(("127.0.0.1", mine)).is_err(),
            "still listening"
        );
    }

    #[test]
    fn a_link_queues_messages_and_delays_each_half_a_round_trip() {
        let net = Network::new(Some(Link {
            bandwidth_bps: 8e6,
            rtt_s: 0.010,
        }));
        let t0 = Instant::now();
        // 1 MB at 8 Mbit/s: one second on the wire, then 5 ms.
        let a = net.arrival(true, t0, 1_000_000);
        assert_eq!(a - t0, Duration::from_millis(1005));
        // The next message waits for the first to cross.
        let b = net.arrival(true, t0, 1_000);
        assert_eq!(b - t0, Duration::from_millis(1006));
        // The other way is free.
        assert_eq!(net.arrival(false, t0, 0) - t0, Duration::from_millis(5));
        assert_eq!(Network::new(None).arrival(true, t0, 1 << 20), t0);
    }
}
