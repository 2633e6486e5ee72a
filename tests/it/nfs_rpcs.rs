//! `fsbench run --nfs URL --nfs-rpcs` and a dialled network (`--nfs-bandwidth`,
//! `--nfs-rtt`): the relay between each worker's libnfs client and the server counts the
//! calls per flowop and procedure, and holds each message as the link would. Against
//! NFS-Ganesha started for the test (see `nfs_common`); skipped without root, Ganesha,
//! rpcbind or libnfs.

use super::common;
use super::nfs_common::Server;
use std::path::Path;

/// N files created and closed, ended by a count.
const CREATES: &str = "\
define fileset name=fs,path=/tmp,entries=20,dirwidth=100,size=4k,prealloc=0
define process name=p,instances=1
{
  thread name=t,memsize=1m,instances=1
  {
    flowop createfile name=create,filesetname=fs,fd=1
    flowop closefile name=close,fd=1
    flowop finishoncount name=finish,value=20,target=create
  }
}
run 60
";

/// One file of SIZE read whole at IOSIZE, once.
fn whole_read(size: &str, iosize: &str) -> String {
    format!(
        "define fileset name=fs,path=/tmp,entries=1,dirwidth=10,size={size},prealloc=100
define process name=p,instances=1
{{
  thread name=t,memsize={iosize},instances=1
  {{
    flowop openfile name=open,filesetname=fs,fd=1
    flowop readwholefile name=readall,fd=1,iosize={iosize}
    flowop closefile name=close,fd=1
    flowop finishoncount name=finish,value=1,target=readall
  }}
}}
run 60
"
    )
}

/// N files looked up (statfile), ended by a count.
const STATS: &str = "\
define fileset name=fs,path=/tmp,entries=10,dirwidth=100,size=1k,prealloc=100
define process name=p,instances=1
{
  thread name=t,memsize=1m,instances=1
  {
    flowop statfile name=stat,filesetname=fs
    flowop finishoncount name=finish,value=10,target=stat
  }
}
run 60
";

/// (procedure, calls, total seconds, bytes) of flowop `name` in a result file, and the
/// flowop's operations and the sum of its latencies (seconds).
struct Row {
    ops: u64,
    bytes: u64,
    lat_s: f64,
    rpcs: Vec<(String, u64, f64, u64)>,
}

fn row(json: &Path, name: &str) -> Row {
    let v = common::json_of(json);
    let f = common::flowop(&v, name).clone();
    let ops = f["ops"].as_u64().unwrap();
    Row {
        ops,
        bytes: f["bytes"].as_u64().unwrap(),
        lat_s: f["latency_us"]["mean"].as_f64().unwrap() * ops as f64 / 1e6,
        rpcs: (f["rpcs"].as_array().cloned().unwrap_or_default().iter())
            .map(|r| {
                (
                    r["procedure"].as_str().unwrap().to_string(),
                    r["calls"].as_u64().unwrap(),
                    r["time_s"].as_f64().unwrap(),
                    r["bytes"].as_u64().unwrap(),
                )
            })
            .collect(),
    }
}

impl Row {
    fn calls(&self, proc: &str) -> u64 {
        (self.rpcs.iter().find(|r| r.0 == proc)).map_or(0, |r| r.1)
    }
    fn all_calls(&self) -> u64 {
        self.rpcs.iter().map(|r| r.1).sum()
    }
}

/// Run workload `text` over NFS with `extra` options; the result file.
fn run(
    srv: &Server,
    s: &common::Scratch,
    tag: &str,
    text: &str,
    extra: &[&str],
) -> std::path::PathBuf {
    let wl = s.path().join(format!("{tag}.f"));
    std::fs::write(&wl, text).unwrap();
    let json = s.path().join(format!("{tag}.json"));
    let url = srv.url();
    let mut args = vec!["run", wl.to_str().unwrap(), "-q", "--nfs", &url];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--json", json.to_str().unwrap()]);
    let o = common::run(&args);
    assert!(o.status.success(), "{}", common::text(&o));
    common::assert_schema("run.schema.json", &std::fs::read_to_string(&json).unwrap());
    json
}

#[test]
fn each_flowops_calls_are_counted_per_procedure() {
    let Some(srv) = Server::start("each_flowops_calls_are_counted_per_procedure") else {
        return;
    };
    let s = common::Scratch::new("nfs-rpcs");
    let j = run(&srv, &s, "creates", CREATES, &["--nfs-rpcs"]);
    let (create, close) = (row(&j, "create"), row(&j, "close"));
    assert_eq!(create.ops, 20);
    assert_eq!(create.calls("CREATE"), 20, "{:?}", create.rpcs);
    assert_eq!(close.calls("CREATE"), 0, "{:?}", close.rpcs);
    assert_eq!(row(&j, "finish").all_calls(), 0);
    // The relay's time is inside the flowop's.
    let t: f64 = create.rpcs.iter().map(|r| r.2).sum();
    assert!(
        t > 0.0 && t <= create.lat_s,
        "{t} s of calls in {} s",
        create.lat_s
    );

    // 1 MiB read whole at 64 KiB: 16 READs bring it, a 17th finds the end.
    let j = run(&srv, &s, "whole", &whole_read("1m", "64k"), &["--nfs-rpcs"]);
    let r = row(&j, "readall");
    assert_eq!((r.ops, r.bytes), (1, 1 << 20));
    assert_eq!(r.calls("READ"), 17, "{:?}", r.rpcs);
    let read_bytes = r.rpcs.iter().find(|x| x.0 == "READ").unwrap().3;
    assert!(
        (1 << 20..(1 << 20) + 17 * 512).contains(&read_bytes),
        "{read_bytes} bytes of READ calls and replies"
    );
    assert_eq!(row(&j, "open").calls("READ"), 0);
    // Without a relay, no calls are counted and the text says nothing of them.
    let j = run(&srv, &s, "direct", &whole_read("1m", "64k"), &[]);
    assert!(row(&j, "readall").rpcs.is_empty());
    assert!(
        names(&srv.export()).is_empty(),
        "{:?}",
        names(&srv.export())
    );
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

const RTT: f64 = 0.010;
const BPS: f64 = 10e6;
/// What a loaded machine adds to one call (waking the relay's threads, the server's work):
/// under a load of 7-8 on 2 cores calls took up to 1.5 ms more on average, single ones 8.
const SLACK_PER_CALL: f64 = 0.004;

#[test]
fn a_dialled_link_gives_its_bandwidth_and_round_trips() {
    let Some(srv) = Server::start("a_dialled_link_gives_its_bandwidth_and_round_trips") else {
        return;
    };
    let s = common::Scratch::new("nfs-link");
    let link = ["--nfs-bandwidth", "10mbit", "--nfs-rtt", "10ms"];
    // Bandwidth: 2 MiB in READs of 1 MiB; each takes a round trip plus its bytes' time.
    let j = run(&srv, &s, "big", &whole_read("2m", "1m"), &link);
    let r = row(&j, "readall");
    assert_eq!(r.bytes, 2 << 20);
    let (_, calls, time, bytes) = r.rpcs.iter().find(|x| x.0 == "READ").unwrap().clone();
    let bps = bytes as f64 * 8.0 / (time - calls as f64 * RTT);
    assert!(
        (bps / BPS - 1.0).abs() < 0.05,
        "{calls} READs moved {bytes} bytes in {time} s: {bps} bit/s"
    );
    assert!(
        r.lat_s >= time,
        "the flowop took {} s, its READs {time} s",
        r.lat_s
    );
    // Round trips: each small call takes one round trip and its few bytes' time.
    let j = run(&srv, &s, "stats", STATS, &link);
    let st = row(&j, "stat");
    assert_eq!(st.ops, 10);
    let n = st.all_calls();
    assert!(n >= 10, "{:?}", st.rpcs);
    let wire: f64 = st.rpcs.iter().map(|x| x.3 as f64 * 8.0 / BPS).sum();
    let least = n as f64 * RTT + wire;
    let most = least + n as f64 * SLACK_PER_CALL;
    assert!(
        (least..most).contains(&st.lat_s),
        "{n} calls took {} s of flowop time: predicted {least} s (at most {most} s)",
        st.lat_s
    );
    let o = common::run(&["run", "-q", "--nfs-rtt", "10ms", "fileserver"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    assert!(
        common::text(&o).contains("add --nfs URL"),
        "{}",
        common::text(&o)
    );
}

/// TCP connections (any state but LISTEN and TIME_WAIT) to or from local port `port`.
fn connections(port: u16) -> usize {
    let hex = format!(":{port:04X} ");
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|t| t.lines().skip(1).map(String::from).collect::<Vec<_>>())
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3
                && (format!("{} ", f[1]).contains(&hex) || format!("{} ", f[2]).contains(&hex))
                && f[3] != "0A"
                && f[3] != "06"
        })
        .count()
}

fn port_of(url: &str, key: &str) -> u16 {
    let at = url.find(&format!("{key}=")).unwrap() + key.len() + 1;
    url[at..].split('&').next().unwrap().parse().unwrap()
}

#[test]
fn nothing_of_the_relay_is_left_after_a_run_or_sigterm() {
    let Some(srv) = Server::start("nothing_of_the_relay_is_left_after_a_run_or_sigterm") else {
        return;
    };
    let nfs_port = port_of(&srv.url(), "nfsport");
    let s = common::Scratch::new("nfs-relay-end");
    let wl = s.path().join("slow.f");
    // Calls for far longer than the test waits: each stat is a few 200-ms round trips.
    std::fs::write(&wl, STATS.replace("value=10", "value=100000")).unwrap();
    let url = srv.url();
    let mut child = common::bin()
        .args([
            "run",
            wl.to_str().unwrap(),
            "-q",
            "--nfs",
            &url,
            "--nfs-rtt",
            "200ms",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    // Wait until the worker's relay has its connection to the server (the layout's own
    // client has one too).
    while connections(nfs_port) < 2 && t0.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(
        connections(nfs_port) >= 2,
        "the run never connected through its relay"
    );
    // SAFETY: signalling a child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t1 = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t1.elapsed().as_secs() > 30 {
            let _ = child.kill();
            panic!("still running 30 s after SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    eprintln!(
        "after SIGTERM: {status}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The run directory was removed from the export, and no connection to the server is
    // left open (Ganesha closes its side once the relay's is gone).
    assert!(
        names(&srv.export()).is_empty(),
        "{:?}",
        names(&srv.export())
    );
    let t2 = std::time::Instant::now();
    while connections(nfs_port) > 0 && t2.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(connections(nfs_port), 0, "connections to the NFS port left");
}
