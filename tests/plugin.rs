//! Extending the server (manual 4.2) without touching `src/`: a tiny driver actor
//! registered in a catalog under a new device code, configured next to the simulator.
//!
//! The `counter` driver serves device `q`: 2-byte data (a u16 counter that advances by a
//! step every 50 ms) and 2-byte commands (set the counter). Config `s <u16>` sets the step;
//! config `h <0|1>` holds its readings back (the device goes quiet) or lets them go again.

use actix::prelude::*;
use bytes::Bytes;
use player::catalog::{DriverContext, StartedDriver};
use player::driver::{
    Command, Config, DeviceData, DeviceSpec, DriverError, Inbox, Publisher, Setup, Shutdown,
    Subscribers, Timestamp,
};
use player::settings::Settings;
use player_kit::plain::{Driver, Reply};
use player_testkit::hw::wait_for;
use player_testkit::*;
use serde::Deserialize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The inbox of every client session the counter drivers of this test binary were given
/// as a reader, in order (`None`: a reader without one).
static READER_INBOXES: Mutex<Vec<(u8, Option<Arc<Inbox>>)>> = Mutex::new(Vec::new());

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CounterParams {
    #[serde(default)]
    start: u16,
    /// How long a setup takes, ms.
    #[serde(default)]
    setup_ms: u64,
    /// How many setups fail before one succeeds.
    #[serde(default)]
    fail_setups: u32,
}

struct Counter {
    code: u8,
    value: u16,
    step: u16,
    up: bool,
    held: bool,
    setup_ms: u64,
    fail_setups: u32,
    publisher: Publisher,
}

impl Counter {
    fn publish(&mut self) {
        let data = Bytes::copy_from_slice(&self.value.to_be_bytes());
        self.publisher.publish(self.code, data);
    }
}

impl Actor for Counter {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(Duration::from_millis(50), |act, _| {
            if act.up && !act.held {
                act.value = act.value.wrapping_add(act.step);
                act.publish();
            }
        });
    }
}

impl Driver for Counter {
    fn publisher(&mut self) -> &mut Publisher {
        &mut self.publisher
    }

    fn setup(
        &mut self,
        _msg: Setup,
        _ctx: &mut Context<Self>,
    ) -> Reply<Self, Result<(), DriverError>> {
        let wait = Duration::from_millis(self.setup_ms);
        Reply::later(actix::clock::sleep(wait).into_actor(self).map(|_, act, _| {
            if act.fail_setups > 0 {
                act.fail_setups -= 1;
                return Err(DriverError::refused("the counter is unplugged"));
            }
            act.up = true;
            act.publish();
            Ok(())
        }))
    }

    fn shutdown(&mut self, _msg: Shutdown, _ctx: &mut Context<Self>) -> Reply<Self, ()> {
        self.up = false;
        Reply::Now(())
    }

    fn command(&mut self, msg: Command, _ctx: &mut Context<Self>) {
        // The session checked the size against the DeviceSpec.
        self.value = u16::from_be_bytes([msg.payload[0], msg.payload[1]]);
    }

    fn config(&mut self, msg: Config, _ctx: &mut Context<Self>) {
        match msg.payload[..] {
            [b's', hi, lo] => self.step = u16::from_be_bytes([hi, lo]),
            [b'h', held] => self.held = held != 0,
            _ => {}
        }
    }

    fn subscribers(&mut self, msg: Subscribers, _ctx: &mut Context<Self>) {
        if let (Some(r), false) = (
            &msg.recipient,
            msg.session == player::registry::SessionId::TAP,
        ) {
            READER_INBOXES
                .lock()
                .unwrap()
                .push((msg.device, r.inbox.clone()));
        }
        self.publisher.set_subscribers(msg);
    }
}

player_kit::driver_handlers!(Counter);

fn catalog_with_counter() -> player::catalog::Catalog {
    let mut catalog = player::builtin_catalog();
    catalog.register("counter", |ctx: DriverContext| {
        let params: CounterParams = ctx.params()?;
        let code = *ctx
            .devices
            .first()
            .ok_or_else(|| DriverError::params("counter needs one device code"))?;
        let addr = Counter {
            code,
            value: params.start,
            step: 1,
            up: false,
            held: false,
            setup_ms: params.setup_ms,
            fail_setups: params.fail_setups,
            publisher: Publisher::new(),
        }
        .start();
        Ok(StartedDriver::of(
            &addr,
            vec![DeviceSpec::read_write(code, 2)],
        ))
    });
    catalog
}

const CONFIG: &str = r#"
[[robot]]
name = "plugged"

[[robot.driver]]
driver = "sim"
devices = ["p", "s", "m", "g", "l", "z", "v"]

[[robot.driver]]
driver = "counter"
devices = ["q"]
[robot.driver.params]
start = 1000
"#;

fn counter(payload: &[u8]) -> u16 {
    assert_eq!(payload.len(), 2);
    u16::from_be_bytes([payload[0], payload[1]])
}

#[test]
fn a_plugin_device_is_served_next_to_the_simulator() {
    let settings = Settings::from_toml(CONFIG, "plugin test").unwrap();
    let server = start_server_with(settings, catalog_with_counter());
    let mut c = Client::connect(server.addr());
    // d r <4> q a p r
    c.send(&[0x64, 0x72, 0x00, 0x04, b'q', b'a', b'p', b'r']);
    assert_eq!(c.read_exact(7), [0x72, 0x00, 0x04, b'q', b'a', b'p', b'r']);
    let mut last = None;
    for _ in 0..5 {
        let round = c.read_round(2);
        assert_eq!(round[0].0, b'q');
        assert_eq!(round[1].0, b'p');
        assert_eq!(round[1].1.len(), 21);
        let v = counter(&round[0].1);
        assert!(v >= 1000, "{v}");
        if let Some(prev) = last {
            assert!(v > prev, "the counter did not advance: {prev} then {v}");
        }
        last = Some(v);
    }
}

/// A client in the default mode (rounds on deadlines) takes its readings from its inbox at
/// each round: a driver's reading costs no message to it, so publishing to thousands of
/// such clients costs no mailbox delivery or cross-thread wake-up per client.
#[test]
fn a_session_sending_on_deadlines_takes_readings_from_its_inbox_not_as_messages() {
    // The counter on a device code of this test's own (`w`): its only reader is this client.
    let config = CONFIG.replace("devices = [\"q\"]", "devices = [\"w\"]");
    let settings = Settings::from_toml(&config, "plugin test").unwrap();
    let server = start_server_with(settings, catalog_with_counter());
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'w', b'r')]), b"wr");
    for _ in 0..5 {
        assert_eq!(c.read_round(1)[0].0, b'w');
    }
    let readers: Vec<Option<Arc<Inbox>>> = READER_INBOXES
        .lock()
        .unwrap()
        .iter()
        .filter(|(device, _)| *device == b'w')
        .map(|(_, inbox)| inbox.clone())
        .collect();
    assert_eq!(readers.len(), 1, "the driver was told of its one reader");
    let inbox = readers[0]
        .clone()
        .expect("a TCP session subscribes with its inbox");
    // Ticking with every first reading in: a reading offered now is left in the inbox
    // (true), not sent as a message. A device it does not read, so its rounds stay as they are.
    let reading = DeviceData {
        device: b'Q',
        data: Bytes::from_static(b"xx"),
        timestamp: Timestamp::now(),
        seq: 0,
    };
    assert!(
        inbox.offer(&reading),
        "a session sending on deadlines asks for a message per reading"
    );
    // And it keeps sending rounds.
    assert_eq!(c.read_round(1)[0].0, b'w');
}

#[test]
fn commands_and_configs_reach_the_plugin_driver() {
    let settings = Settings::from_toml(CONFIG, "plugin test").unwrap();
    let server = start_server_with(settings, catalog_with_counter());
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'q', b'a')]), b"qa");
    let before = counter(&c.read_message().1);
    assert!(before < 20000);
    // c q <2> 0x9C40 = 40000
    c.send(&[0x63, b'q', 0x00, 0x02, 0x9C, 0x40]);
    // A command of the wrong size is not passed on.
    c.send(&[0x63, b'q', 0x00, 0x03, 0x00, 0x00, 0x00]);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut v = counter(&c.read_message().1);
    while v < 40000 {
        assert!(
            std::time::Instant::now() < deadline,
            "command not applied: {v}"
        );
        v = counter(&c.read_message().1);
    }
    assert!(v < 40100, "{v}");
    // x q <3> s 00 64: step 100.
    c.send(&[0x78, b'q', 0x00, 0x03, b's', 0x00, 0x64]);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut a = counter(&c.read_message().1);
    loop {
        let b = counter(&c.read_message().1);
        // At 10 Hz with a 50 ms tick, consecutive readings differ by about two steps.
        if b.wrapping_sub(a) >= 100 {
            assert_eq!(b.wrapping_sub(a) % 100, 0, "{a} then {b}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "config not applied");
        a = b;
    }
}

/// The registry reads every device it has set up: the device list gives a device's rate,
/// a device that stops publishing is reported failed to the clients that asked for notices
/// after `quiet_after`, and the first reading after that is reported at once, not at the
/// registry's next check (while a device is silent its readings reach the registry as
/// messages; while all are well it takes them from an inbox once a second).
#[test]
fn a_device_that_goes_quiet_is_reported_and_its_first_reading_again_at_once() {
    let config = format!("[server]\nquiet_after = 1.0\n{CONFIG}");
    let settings = Settings::from_toml(&config, "plugin test").unwrap();
    let server = start_server_with(settings, catalog_with_counter());
    let mut c = player_client::Client::connect(server.addr()).unwrap();
    c.request("qa").unwrap().check().unwrap();
    c.set_notices(true).unwrap();
    let rate = |c: &mut player_client::Client| {
        let list = c.device_list().unwrap();
        let q = list.iter().find(|e| e.code == b'q').unwrap().clone();
        (q.rate_hz(), q.state, q.data_size)
    };
    // Holds the counter's readings back (or lets them go) and waits for the notice that
    // follows: the notice and how long it took.
    let hold = |c: &mut player_client::Client, held: u8| {
        c.config(b'q', b'h', &[held]).unwrap();
        let from = Instant::now();
        let n = c.wait_notice(Duration::from_secs(10)).unwrap();
        (n.expect("a notice"), from.elapsed())
    };
    // A reading every 50 ms, counted over two seconds from the first check.
    wait_for("the counter's rate to be listed", || rate(&mut c).0 > 0.0);
    let (hz, state, size) = rate(&mut c);
    assert!((17.0..=21.5).contains(&hz), "listed at {hz} Hz");
    assert_eq!((state, size), (b'u', 2));

    let (n, quiet) = hold(&mut c, 1);
    assert_eq!((n.kind, n.device), (b'f', b'q'), "{n:?}");
    assert!(n.text.starts_with("no reading for"), "{n:?}");
    // One second of quiet, seen at a check a second apart, from a reading seen at a check.
    assert!(
        (Duration::from_millis(900)..Duration::from_secs(4)).contains(&quiet),
        "reported after {quiet:?}"
    );
    let (hz, state, _) = rate(&mut c);
    assert_eq!((hz, state), (0.0, b'f'), "listed as failed");

    let (n, back) = hold(&mut c, 0);
    assert_eq!(
        (n.kind, n.device, n.text.as_str()),
        (b'u', b'q', "readings again")
    );
    assert!(
        back < Duration::from_millis(400),
        "readings again reported {back:?} after they started (a reading every 50 ms)"
    );
    wait_for("the counter to be listed up again", || {
        rate(&mut c).1 == b'u'
    });
}

#[test]
fn a_plugin_device_code_is_unknown_without_the_plugin() {
    // The same request against the stock server: q is unknown.
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'q', b'a'), (b'p', b'r')]), b"qepr");
}

#[test]
fn a_configuration_naming_an_unregistered_driver_does_not_start() {
    let settings = Settings::from_toml(CONFIG, "plugin test").unwrap();
    let result = TestServer::try_start(
        settings,
        player::builtin_catalog(),
        player::logging::discard(),
    )
    .err()
    .map(|e| match e {
        player::server::StartError::NoDriver {
            driver, available, ..
        } => (driver, available),
        other => panic!("expected a refused driver name, got: {other}"),
    });
    let (driver, available) = result.expect("the server must refuse a driver it does not know");
    assert_eq!(driver, "counter");
    assert!(available.iter().any(|d| d == "sim"), "{available:?}");
    assert!(!available.iter().any(|d| d == "counter"), "{available:?}");
}

/// Starts a server with `settings` as given (its ports too: the testkit's server would move
/// them to port 0) on a thread of its own, expects it to refuse, and hands the error to
/// `check` there.
fn refused(settings: Settings, check: impl FnOnce(player::server::StartError) + Send + 'static) {
    std::thread::spawn(move || {
        actix_rt::System::new().block_on(async move {
            let e = player::server::start(
                &settings,
                &catalog_with_counter(),
                std::path::PathBuf::from("."),
                player::logging::discard(),
            )
            .await
            .err()
            .expect("the server must refuse to start");
            check(e);
        })
    })
    .join()
    .unwrap();
}

#[test]
fn start_errors_name_the_busy_port_the_device_served_twice_and_the_front_end() {
    use player::server::StartError;
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    let text = format!(
        "[[robot]]\nname = \"r\"\nbind = \"127.0.0.1\"\nport = {port}\nweb_port = 0\n\
         [[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\"]\n"
    );
    refused(Settings::from_toml(&text, "t").unwrap(), move |e| match e {
        StartError::Listen {
            robot,
            addr,
            source,
            ..
        } => {
            assert_eq!(robot, "r");
            assert_eq!(addr, format!("127.0.0.1:{port}"));
            assert_eq!(source.kind(), std::io::ErrorKind::AddrInUse);
        }
        other => panic!("expected a busy port, got: {other}"),
    });
    let twice = "[[robot]]\nname = \"r\"\nbind = \"127.0.0.1\"\nport = 0\nweb_port = 0\n\
                 [[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\"]\n\
                 [[robot.driver]]\ndriver = \"counter\"\ndevices = [\"q\"]\n\
                 [[robot.driver]]\ndriver = \"counter\"\ndevices = [\"q\"]\n";
    refused(Settings::from_toml(twice, "t").unwrap(), |e| match e {
        StartError::ServedTwice {
            robot,
            device,
            first,
            second,
        } => assert_eq!(
            (robot.as_str(), device, first.as_str(), second.as_str()),
            ("r", b'q', "counter", "counter")
        ),
        other => panic!("expected a device served twice, got: {other}"),
    });
    // A configured web port that is busy stops the start; the front end is named.
    let web = format!(
        "[[robot]]\nname = \"r\"\nbind = \"127.0.0.1\"\nport = 0\nweb_port = {port}\n\
         [[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\"]\n"
    );
    refused(Settings::from_toml(&web, "t").unwrap(), |e| match e {
        StartError::FrontEnd { name, source } => {
            assert_eq!(name, "web");
            match source.downcast_ref::<player::web::WebError>() {
                Some(player::web::WebError::Listen { robot, source, .. }) => {
                    assert_eq!(robot, "r");
                    assert_eq!(source.kind(), std::io::ErrorKind::AddrInUse);
                }
                other => panic!("expected the web viewer's Listen error, got: {other:?}"),
            }
        }
        other => panic!("expected the web viewer to refuse, got: {other}"),
    });
    drop(busy);
}

/// The simulator plus a counter on `q` with these extra parameters and server settings.
fn slow_config(params: &str, server: &str) -> Settings {
    let text = format!(
        r#"
[server]
{server}

[[robot]]
[[robot.driver]]
driver = "sim"
devices = ["p", "s", "m", "g", "l", "z", "v"]

[[robot.driver]]
driver = "counter"
devices = ["q"]
[robot.driver.params]
{params}
"#
    );
    Settings::from_toml(&text, "plugin test").unwrap()
}

#[test]
fn a_slow_setup_delays_neither_other_clients_nor_the_clients_other_data() {
    let server = start_server_with(slow_config("setup_ms = 2000", ""), catalog_with_counter());
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    c.read_message();
    let asked = Instant::now();
    c.send_request(&[(b'q', b'r')]);
    // Meanwhile another client's request for another device is answered at once ...
    let mut other = Client::connect(server.addr());
    let t = Instant::now();
    assert_eq!(other.request(&[(b's', b'r')]), b"sr");
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "a request for the sonar waited {:?} for the counter's setup",
        t.elapsed()
    );
    // ... and this client keeps getting its position data until the reply (footnote 7:
    // replies to later requests are intermingled with data).
    let (before, reply) = c.read_reply_skipping_data();
    let waited = asked.elapsed();
    assert_eq!(reply, b"qr");
    assert!(
        waited >= Duration::from_millis(1500),
        "setup took only {waited:?}"
    );
    assert!(before.iter().all(|(d, _)| *d == b'p'));
    assert!(
        before.len() >= 8,
        "only {} position packets during a 2 s setup",
        before.len()
    );
    for _ in 0..3 {
        assert_eq!(c.read_round_codes(2), [b'p', b'q']);
    }
}

#[test]
fn clients_waiting_for_the_same_setup_are_all_granted() {
    let server = start_server_with(slow_config("setup_ms = 1000", ""), catalog_with_counter());
    let mut a = Client::connect(server.addr());
    let mut b = Client::connect(server.addr());
    a.send_request(&[(b'q', b'r')]);
    // A sleep on purpose: a's request reaches the server first (nothing shows it
    // from outside until the setup ends).
    std::thread::sleep(Duration::from_millis(200));
    b.send_request(&[(b'q', b'a')]);
    assert_eq!(a.read_reply(), b"qr");
    assert_eq!(b.read_reply(), b"qa");
    assert_eq!(a.read_message().0, b'q');
    assert_eq!(b.read_message().0, b'q');
}

#[test]
fn a_failed_setup_is_e_and_a_retry_sets_the_device_up_again() {
    let server = start_server_with(slow_config("fail_setups = 1", ""), catalog_with_counter());
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'q', b'r'), (b'p', b'r')]), b"qepr");
    // No data for q, only p.
    for _ in 0..3 {
        assert_eq!(c.read_round_codes(1), [b'p']);
    }
    // Retrying after e is a fresh request (not the original's one-count `a`).
    assert_eq!(c.request(&[(b'q', b'r')]), b"qr");
    let mut codes = c.read_round_codes(2);
    while codes != [b'q', b'p'] {
        assert!(codes.contains(&b'p'));
        codes = vec![codes[1], c.read_message().0];
    }
}

#[test]
fn a_setup_that_never_finishes_times_out_as_e() {
    let server = start_server_with(
        slow_config("setup_ms = 3600000", "setup_timeout = 1.0"),
        catalog_with_counter(),
    );
    let mut c = Client::connect(server.addr());
    let t = Instant::now();
    assert_eq!(c.request(&[(b'q', b'r'), (b'm', b'r')]), b"qemr");
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    for _ in 0..3 {
        assert_eq!(c.read_round_codes(1), [b'm']);
    }
}

#[test]
fn shutdown_during_a_slow_setup_is_prompt() {
    let server = start_server_with(slow_config("setup_ms = 3000", ""), catalog_with_counter());
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    c.send_request(&[(b'q', b'r')]);
    // A sleep on purpose: the slow setup is under way (nothing shows it from
    // outside) when the shutdown comes.
    std::thread::sleep(Duration::from_millis(300));
    let took = server.shutdown();
    assert!(took < Duration::from_secs(6), "shutdown took {took:?}");
    c.expect_closed(Duration::from_secs(5));
}
