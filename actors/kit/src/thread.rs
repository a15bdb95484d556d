//! A driver on a thread of its own.
//!
//! Drivers share one arbiter with the robot's registry (and with the sessions the listener
//! places there): a handler that computes for long holds all of them up. Most drivers
//! decode a reading and publish it in microseconds; a few compute for long by design: a
//! planner's search over a building's map (a full-grid wavefront over 2000 x 2000 cells
//! is a tenth of a second, its costmap with the laser's obstacles another), a particle
//! filter's update during global localization. Such a driver starts with
//! [`start_on_own_thread`]: its messages cross threads (a wake-up per reading, which at
//! the rates of a navigation driver costs nothing that matters) and its computing delays
//! nobody else. The thread ends when the driver stops.

use actix::{Actor, Addr, Arbiter, ArbiterHandle, Context};

/// What ends a driver's own thread when the driver is dropped (it stopped): a field of
/// every driver that may run on a thread of its own. A driver started on the shared
/// arbiter (as in its unit tests) holds an empty one, which ends nothing.
#[derive(Debug, Default)]
pub struct OwnThread(Option<ArbiterHandle>);

impl Drop for OwnThread {
    fn drop(&mut self) {
        if let Some(arbiter) = self.0.take() {
            arbiter.stop();
        }
    }
}

/// A driver that can be started on a thread of its own.
pub trait OnOwnThread: Actor<Context = Context<Self>> + Send {
    /// The driver's [`OwnThread`] field.
    fn own_thread(&mut self) -> &mut OwnThread;
}

/// Starts `driver` on a new arbiter of its own, whose thread is named `name` (the first
/// 15 bytes, Linux's limit: what `top -H` and `/proc/PID/task/*/comm` show). The thread
/// ends when the driver stops, or with the actor system.
pub fn start_on_own_thread<A: OnOwnThread>(name: &str, mut driver: A) -> Addr<A> {
    let arbiter = Arbiter::new();
    let handle = arbiter.handle();
    let name: Vec<u8> = name.bytes().filter(|&b| b != 0).take(15).collect();
    handle.spawn_fn(move || set_thread_name(&name));
    *driver.own_thread() = OwnThread(Some(handle.clone()));
    A::start_in_arbiter(&handle, move |_| driver)
}

/// Names the calling thread (Linux; elsewhere nothing).
#[allow(unsafe_code)]
fn set_thread_name(name: &[u8]) {
    #[cfg(target_os = "linux")]
    {
        let mut buf = [0u8; 16];
        buf[..name.len()].copy_from_slice(name);
        // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes from the
        // pointer, and `buf` is 16 bytes with at least its last one zero.
        unsafe {
            libc::prctl(libc::PR_SET_NAME, buf.as_ptr() as libc::c_ulong, 0, 0, 0);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = name;
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix::prelude::*;

    struct Busy {
        own: OwnThread,
    }

    impl Actor for Busy {
        type Context = Context<Self>;
    }

    impl OnOwnThread for Busy {
        fn own_thread(&mut self) -> &mut OwnThread {
            &mut self.own
        }
    }

    #[derive(Message)]
    #[rtype(result = "(String, std::thread::ThreadId, ArbiterHandle)")]
    struct Where;

    impl Handler<Where> for Busy {
        type Result = MessageResult<Where>;
        fn handle(&mut self, _: Where, _: &mut Context<Self>) -> Self::Result {
            let comm = std::fs::read_to_string("/proc/thread-self/comm").unwrap_or_default();
            let id = std::thread::current().id();
            MessageResult((comm.trim().to_string(), id, Arbiter::current()))
        }
    }

    #[derive(Message)]
    #[rtype(result = "()")]
    struct Quit;

    impl Handler<Quit> for Busy {
        type Result = ();
        fn handle(&mut self, _: Quit, ctx: &mut Context<Self>) {
            ctx.stop();
        }
    }

    #[actix_rt::test]
    async fn the_driver_runs_on_its_named_thread_which_ends_with_it() {
        let busy = Busy {
            own: OwnThread::default(),
        };
        let addr = start_on_own_thread("a-long-name-for-a-thread", busy);
        let (comm, id, arbiter) = addr.send(Where).await.unwrap();
        assert_ne!(
            id,
            std::thread::current().id(),
            "not on a thread of its own"
        );
        if cfg!(target_os = "linux") {
            assert_eq!(comm, "a-long-name-for");
        }
        addr.send(Quit).await.unwrap();
        // A stopped arbiter takes no more work.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while arbiter.spawn_fn(|| ()) {
            assert!(
                std::time::Instant::now() < deadline,
                "the driver's thread outlived it"
            );
            actix_rt::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
}
