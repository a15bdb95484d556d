//! Network namespaces and veth pairs, for tests that need a real link between two hosts
//! (a controller whose link goes down, two servers on two machines). They need root: a
//! test checks [`is_root`] first and skips with a message otherwise. Everything made here
//! is removed on drop.

// Unsafe code: geteuid(2) and setns(2) (Linux calls) to run tests in a network namespace.
#![allow(unsafe_code)]

use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Whether the tests run as root (namespaces and veth pairs need it).
pub fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

/// Runs `ip` with `args`; true if it succeeded.
pub fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .status()
        .is_ok_and(|s| s.success())
}

/// A name no other namespace or interface of this test process has: `pl<tag><n>`, short
/// enough for an interface name (15 characters).
fn unique(tag: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("pl{tag}{}{n}", std::process::id() % 100_000)
}

/// A network namespace with its loopback up, deleted on drop.
pub struct Netns {
    /// Its name (for `ip netns exec` and `ip -n`).
    pub name: String,
}

impl Netns {
    /// Makes one; `None` if that fails (not root, no `ip`).
    pub fn create(tag: &str) -> Option<Netns> {
        let ns = Netns { name: unique(tag) };
        if ip(&["netns", "add", &ns.name]) && ip(&["-n", &ns.name, "link", "set", "lo", "up"]) {
            Some(ns)
        } else {
            None
        }
    }

    /// A command that runs `program` inside the namespace (`ip netns exec`, which execs
    /// it: killing the child kills the program).
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// Runs `f` on a new thread that has entered the namespace: sockets it opens live
    /// there (and may be used from any thread afterwards).
    pub fn run_in<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/var/run/netns/{}", self.name);
        std::thread::spawn(move || {
            let ns = std::fs::File::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
            let r = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(r, 0, "setns({path}): {}", std::io::Error::last_os_error());
            f()
        })
        .join()
        .expect("the thread in the namespace panicked")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        ip(&["netns", "del", &self.name]);
    }
}

/// A veth pair: one end in namespace `a` (the root namespace when `None`), the other in
/// `b`, each with an address in one /30 and up. Deleted on drop (before its namespaces).
pub struct Veth {
    /// The interface name of the `a` end.
    pub a_if: String,
    /// The interface name of the `b` end.
    pub b_if: String,
    a_ns: Option<String>,
    b_ns: String,
}

impl Veth {
    /// Joins `a` (at `a_addr`) and `b` (at `b_addr`), both in one /30.
    pub fn join(a: Option<&Netns>, a_addr: &str, b: &Netns, b_addr: &str) -> Option<Veth> {
        let v = Veth {
            a_if: unique("a"),
            b_if: unique("b"),
            a_ns: a.map(|n| n.name.clone()),
            b_ns: b.name.clone(),
        };
        let ok = ip(&[
            "link", "add", &v.a_if, "type", "veth", "peer", "name", &v.b_if,
        ]) && ip(&["link", "set", &v.b_if, "netns", &v.b_ns])
            && v.a_ns
                .as_ref()
                .is_none_or(|ns| ip(&["link", "set", &v.a_if, "netns", ns]))
            && v.ip_a(&["addr", "add", &format!("{a_addr}/30"), "dev", &v.a_if])
            && v.ip_a(&["link", "set", &v.a_if, "up"])
            && ip(&[
                "-n",
                &v.b_ns,
                "addr",
                "add",
                &format!("{b_addr}/30"),
                "dev",
                &v.b_if,
            ])
            && ip(&["-n", &v.b_ns, "link", "set", &v.b_if, "up"]);
        ok.then_some(v)
    }

    /// `ip` in the namespace of the `a` end.
    fn ip_a(&self, args: &[&str]) -> bool {
        match &self.a_ns {
            Some(ns) => {
                let mut all = vec!["-n", ns.as_str()];
                all.extend_from_slice(args);
                ip(&all)
            }
            None => ip(args),
        }
    }

    /// Takes the `a` end down or brings it up: no FIN, no RST, the packets just stop.
    pub fn set_a(&self, up: bool) -> bool {
        self.ip_a(&["link", "set", &self.a_if, if up { "up" } else { "down" }])
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        // Deleting one end deletes the pair.
        if !self.ip_a(&["link", "del", &self.a_if]) {
            ip(&["-n", &self.b_ns, "link", "del", &self.b_if]);
        }
    }
}

/// A `player` process serving inside a namespace, killed on drop; its standard error is
/// kept for failure messages.
pub struct ServerInNetns {
    child: std::process::Child,
    /// What the process wrote on standard error so far.
    pub stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl ServerInNetns {
    /// Starts `program args...` in `ns` and waits until it accepts connections on `port`
    /// of the namespace's loopback; fails the test with its log after [`crate::TIMEOUT`].
    pub fn start(ns: &Netns, program: &str, args: &[&str], port: u16) -> ServerInNetns {
        let mut child = ns
            .command(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start player in the namespace");
        let stderr = crate::collect_stderr(&mut child);
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let up = ns.run_in(move || {
            let deadline = std::time::Instant::now() + crate::TIMEOUT;
            while std::time::Instant::now() < deadline {
                if std::net::TcpStream::connect(addr).is_ok() {
                    return true;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            false
        });
        assert!(up, "the server did not start: {}", stderr.lock().unwrap());
        ServerInNetns { child, stderr }
    }
}

impl Drop for ServerInNetns {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
