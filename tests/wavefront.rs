//! The `wavefront` planner over real TCP: the simulated robot in the maze world
//! (config/worlds/maze.toml, noise off so its full-precision odometry `P` is the truth),
//! the `mapfile` driver serving the world as `M`, and `wavefront` serving `G` with the pose
//! from `P`. A client sends goals as 12-byte commands and reads `G` (decoded here from the
//! layout, 43 bytes big-endian, not by `player_proto`'s decoder): goals reached with both
//! controllers, a goal in a wall refused with state 5 and a notice, the e-stop (wheels
//! stopped within 0.2 s of simulated time, state 6, goals refused until the release), a
//! client's own `c p` pre-empting (state 7 and the notice), cancel stopping the base,
//! goals needing write access to `G`, and the next client finding the robot where the last
//! left it (the base's odometry restarts at zero when it is opened again). And the maze tour with `amcl` in the loop
//! (`common/tour.rs`, the pose from `H`, the truth from the world's log): two seeded goals
//! at most 4 m apart per controller, each reached within the tolerance, without a collision and within twice
//! the shortest path's time (`cargo bench --bench nav_tour` runs the issue's 20).

mod common;

use common::tour;

use player::settings::Settings;
use player_proto::ext::kind;
use player_proto::odometry::Odometry;
use player_testkit::*;
use std::time::{Duration, Instant};

thread_local! {
    static LOG: std::cell::RefCell<Option<LogCapture>> = const { std::cell::RefCell::new(None) };
}

/// The maze's start pose, mm and degrees.
const START: [i32; 3] = [1000, 1000, 0];

/// `G` data as the layout gives it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct G {
    valid: u8,
    done: u8,
    pose: [i32; 3],
    goal: [i32; 3],
    waypoint: [i32; 3],
    curr_waypoint: i16,
    waypoint_count: u16,
    state: u8,
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

fn decode_g(b: &[u8]) -> G {
    assert_eq!(b.len(), 43, "G data is 43 bytes");
    let three = |at: usize| [i32_at(b, at), i32_at(b, at + 4), i32_at(b, at + 8)];
    G {
        valid: b[0],
        done: b[1],
        pose: three(2),
        goal: three(14),
        waypoint: three(26),
        curr_waypoint: i16::from_be_bytes([b[38], b[39]]),
        waypoint_count: u16::from_be_bytes([b[40], b[41]]),
        state: b[42],
    }
}

fn goal_bytes(x: i32, y: i32, a: i32) -> Vec<u8> {
    [x, y, a].iter().flat_map(|v| v.to_be_bytes()).collect()
}

fn server(controller: &str) -> TestServer {
    let world = concat!(env!("CARGO_MANIFEST_DIR"), "/config/worlds/maze.toml");
    let text = format!(
        r#"
[[robot]]
command_timeout = 0.5

[[robot.driver]]
driver = "sim"
devices = ["p", "P", "l"]
[robot.driver.params]
world = "{world}"
noise = false
base_hz = 20.0

[[robot.driver]]
driver = "mapfile"
devices = ["M"]
[robot.driver.params]
map = "world"

[[robot.driver]]
driver = "wavefront"
devices = ["G"]
[robot.driver.params]
controller = "{controller}"
pose = "P"
pose_origin = [{}, {}, {}]
"#,
        START[0], START[1], START[2]
    );
    let settings = Settings::from_toml(&text, "wavefront test").unwrap_or_else(|e| panic!("{e}"));
    let log = LogCapture::default();
    let s = start_server_logged(settings, player::builtin_catalog(), log.logger());
    std::mem::forget(log.clone());
    LOG.with(|l| *l.borrow_mut() = Some(log));
    s
}

/// A client reading `G` and `P`, keeping the newest of each and the notices.
struct Nav {
    c: Client,
    g: Option<G>,
    raw_g: Vec<u8>,
    p: Option<Odometry>,
    notices: Vec<(u8, u8, String)>,
}

impl Nav {
    fn connect(server: &TestServer, g_access: u8) -> Nav {
        let mut c = Client::connect(server.addr());
        c.config(b'y', b'e', &[1]);
        assert_eq!(
            c.request(&[(b'G', g_access), (b'P', b'r')]),
            vec![b'G', g_access, b'P', b'r']
        );
        Nav {
            c,
            g: None,
            raw_g: Vec::new(),
            p: None,
            notices: Vec::new(),
        }
    }

    fn read_one(&mut self) {
        let Some((code, payload)) = self.c.read_message_within(Duration::from_millis(500)) else {
            return;
        };
        match code {
            b'G' => {
                self.g = Some(decode_g(&payload));
                self.raw_g = payload;
            }
            b'P' => self.p = Some(Odometry::decode(&payload).expect("25 bytes of P")),
            b'y' if payload.len() >= 2 => self.notices.push((
                payload[0],
                payload[1],
                String::from_utf8_lossy(&payload[2..]).into_owned(),
            )),
            b'p' => self.c.resend_held(),
            _ => {}
        }
    }

    /// Reads until `pred` holds of the newest `G`; returns it.
    fn until_g(&mut self, within: Duration, what: &str, pred: impl Fn(&G) -> bool) -> G {
        let deadline = Instant::now() + within;
        loop {
            if let Some(g) = self.g.filter(|g| pred(g)) {
                return g;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not within {within:?}; G = {:?}, P = {:?}, notices {:?}\n{}",
                self.g,
                self.p,
                self.notices,
                LOG.with(|l| l.borrow().as_ref().map(|l| l.dump()).unwrap_or_default())
            );
            self.read_one();
        }
    }

    /// Reads until a notice of `kind` whose text contains `text`; returns its text.
    fn until_notice(&mut self, kind: u8, text: &str) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(i) = self
                .notices
                .iter()
                .position(|(k, _, t)| *k == kind && t.contains(text))
            {
                return self.notices.remove(i).2;
            }
            assert!(
                Instant::now() < deadline,
                "no notice '{}' with {text:?}; got {:?}",
                char::from(kind),
                self.notices
            );
            self.read_one();
        }
    }

    /// Reads until a `P` reading satisfies `pred`; returns it.
    fn until_p(
        &mut self,
        within: Duration,
        what: &str,
        pred: impl Fn(&Odometry) -> bool,
    ) -> Odometry {
        let deadline = Instant::now() + within;
        self.p = None;
        loop {
            if let Some(p) = self.p.filter(|p| pred(p)) {
                return p;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: P = {:?}, G = {:?}",
                self.p,
                self.g
            );
            self.read_one();
        }
    }

    fn goal(&mut self, x: i32, y: i32, a: i32) {
        self.c.command(b'G', &goal_bytes(x, y, a));
    }
}

/// The robot's true pose on the map from `P` (noise off: the odometry is exact, from the
/// start pose): mm, mm, degrees.
fn truth(p: &Odometry) -> (f64, f64, f64) {
    (
        f64::from(START[0] + p.x),
        f64::from(START[1] + p.y),
        f64::from(p.heading) / 3600.0 + f64::from(START[2]),
    )
}

fn reach(controller: &str) {
    let server = server(controller);
    let mut n = Nav::connect(&server, b'a');
    n.until_g(TIMEOUT, "the planner idle", |g| g.state == 0);
    // 3 m east along the bottom corridor, ending facing north.
    n.goal(4000, 1000, 90);
    let driving = n.until_g(TIMEOUT, "driving", |g| g.state == 2);
    assert_eq!(driving.goal, [4000, 1000, 90]);
    assert_eq!(driving.valid, 1);
    assert!(driving.waypoint_count >= 2 && driving.curr_waypoint >= 0);
    // Its waypoints, answered as a `y` packet of kind G.
    n.c.config(b'G', b'w', &[]);
    let g = n.until_g(Duration::from_secs(60), "reached", |g| g.state == 3);
    assert_eq!((g.done, g.goal), (1, [4000, 1000, 90]));
    let p = n.until_p(TIMEOUT, "at rest", |p| p.speed == 0 && p.turn_rate == 0);
    let (x, y, h) = truth(&p);
    let d = (x - 4000.0).hypot(y - 1000.0);
    let dh = (h - 90.0).rem_euclid(360.0);
    let dh = dh.min(360.0 - dh);
    assert!(
        d <= 250.0 && dh <= 15.0,
        "{controller}: ended at {x} {y} {h}: {d} mm, {dh} deg off"
    );
    eprintln!("{controller}: reached within {d:.0} mm and {dh:.1} deg");
    let answer = n
        .notices
        .iter()
        .find(|(k, code, _)| *k == b'G' && *code == b'w')
        .cloned();
    assert!(answer.is_some(), "the waypoints' answer came");
}

#[test]
fn a_goal_is_reached_with_vfh() {
    reach("vfh");
}

#[test]
fn a_goal_is_reached_with_pure_pursuit() {
    reach("pure_pursuit");
}

#[test]
fn a_goal_in_a_wall_or_off_the_map_gets_no_path_and_a_notice() {
    let server = server("pure_pursuit");
    let mut n = Nav::connect(&server, b'a');
    n.until_g(TIMEOUT, "the planner idle", |g| g.state == 0);
    // Wait for the map: the first goal is checked once it is in.
    std::thread::sleep(Duration::from_millis(500));
    n.goal(200, 5000, 0);
    let g = n.until_g(TIMEOUT, "no path", |g| g.state == 5);
    assert_eq!(g.goal, [200, 5000, 0]);
    let why = n.until_notice(kind::COMMAND, "goal refused");
    assert!(why.contains("in an obstacle"), "{why}");
    n.goal(20_000, 5000, 0);
    n.until_g(TIMEOUT, "the goal replaced", |g| {
        g.goal[0] == 20_000 && g.state == 5
    });
    let why = n.until_notice(kind::COMMAND, "goal refused");
    assert!(why.contains("off the map"), "{why}");
    let p = n.until_p(TIMEOUT, "a reading", |_| true);
    assert_eq!((p.x, p.y, p.speed), (0, 0, 0), "the robot never moved");
}

#[test]
fn a_goal_needs_write_access_to_g() {
    let server = server("vfh");
    let mut n = Nav::connect(&server, b'r');
    n.until_g(TIMEOUT, "the planner idle", |g| g.state == 0);
    n.goal(4000, 1000, 0);
    let why = n.until_notice(kind::COMMAND, "no write access");
    assert!(why.contains("write access"), "{why}");
    let g = n.until_g(TIMEOUT, "G", |_| true);
    assert_eq!((g.state, g.goal), (0, [0; 3]));
}

#[test]
fn the_estop_stops_the_wheels_within_a_fifth_of_a_second_and_refuses_goals_until_released() {
    let server = server("pure_pursuit");
    let mut n = Nav::connect(&server, b'a');
    let mut bystander = Client::connect(server.addr());
    n.until_g(TIMEOUT, "the planner idle", |g| g.state == 0);
    n.goal(8000, 1000, 0);
    let moving = n.until_p(Duration::from_secs(20), "moving", |p| p.speed > 300);
    // Latched (by another client) after the reading `moving`: the wheels must be still in
    // every reading from 0.2 s of simulated time after it.
    bystander.config(b'y', b'E', &[1]);
    let deadline = moving.time + 200;
    let first = n.until_p(TIMEOUT, "0.2 s later", |p| p.time >= deadline);
    assert_eq!(
        (first.speed, first.turn_rate),
        (0, 0),
        "{moving:?} -> {first:?}"
    );
    n.until_g(TIMEOUT, "e-stopped", |g| g.state == 6);
    for _ in 0..10 {
        let p = n.until_p(TIMEOUT, "still", |_| true);
        assert_eq!((p.x, p.y, p.speed), (first.x, first.y, 0));
    }
    // Goals are refused while it is latched.
    n.goal(2000, 1000, 0);
    let why = n.until_notice(kind::COMMAND, "emergency stop");
    assert!(why.contains("latched"), "{why}");
    let g = n.until_g(TIMEOUT, "G", |_| true);
    assert_eq!(g.state, 6);
    assert_ne!(g.goal, [2000, 1000, 0]);
    // Released: idle, and a new goal drives.
    bystander.config(b'y', b'E', &[0]);
    n.until_g(TIMEOUT, "idle after the release", |g| g.state == 0);
    n.goal(2000, 1000, 0);
    n.until_g(TIMEOUT, "driving again", |g| g.state == 2 || g.state == 3);
}

#[test]
fn a_clients_own_command_pre_empts_navigation_and_the_base_obeys_it() {
    let server = server("pure_pursuit");
    let mut n = Nav::connect(&server, b'a');
    assert_eq!(n.c.request(&[(b'p', b'a')]), b"pa");
    n.until_g(TIMEOUT, "the planner idle", |g| g.state == 0);
    n.goal(8000, 1000, 0);
    n.until_p(Duration::from_secs(20), "moving", |p| p.speed > 300);
    n.c.drive(0, 0);
    let why = n.until_notice(kind::PREEMPTED, "navigation pre-empted");
    assert!(why.contains("wavefront"), "{why}");
    n.until_g(TIMEOUT, "pre-empted", |g| g.state == 7);
    n.until_p(TIMEOUT, "stopped by the client", |p| p.speed == 0);
    // The client's stop holds while it keeps commanding.
    let p = n.until_p(Duration::from_secs(2), "a reading", |_| true);
    let later = loop {
        let q = n.until_p(TIMEOUT, "a reading", |_| true);
        if q.time >= p.time + 1000 {
            break q;
        }
    };
    assert_eq!((later.x, later.speed), (p.x, 0));
    assert_eq!(n.g.unwrap().state, 7);
}

#[test]
fn cancel_stops_the_base() {
    let server = server("vfh");
    let mut n = Nav::connect(&server, b'a');
    n.until_g(TIMEOUT, "the planner idle", |g| g.state == 0);
    n.goal(8000, 1000, 0);
    n.until_p(Duration::from_secs(20), "moving", |p| p.speed > 100);
    n.c.config(b'G', b'c', &[]);
    let g = n.until_g(TIMEOUT, "idle", |g| g.state == 0);
    assert_eq!(g.goal, [0; 3]);
    let stopped = n.until_p(TIMEOUT, "stopped", |p| p.speed == 0);
    let later = n.until_p(TIMEOUT, "a second later", |p| p.time >= stopped.time + 1000);
    assert_eq!((later.x, later.speed), (stopped.x, 0));
}

#[test]
fn the_first_reading_of_g_says_where_the_robot_is() {
    // The planner publishes once it has a pose: a reading at setup, before the base's
    // first, said (0, 0), the map's corner, to a client reading as data comes.
    let server = server("vfh");
    let mut c = Client::connect(server.addr());
    c.frequency(1000);
    c.data_mode(2);
    assert_eq!(c.request(&[(b'G', b'r')]), vec![b'G', b'r']);
    let deadline = Instant::now() + TIMEOUT;
    let first = loop {
        assert!(Instant::now() < deadline, "no G reading within {TIMEOUT:?}");
        match c.read_message_within(Duration::from_millis(500)) {
            Some((b'G', payload)) => break decode_g(&payload),
            _ => continue,
        }
    };
    let off = f64::from(first.pose[0] - START[0]).hypot(f64::from(first.pose[1] - START[1]));
    assert!(
        off <= 20.0,
        "the first G reading puts the robot at {:?}, it starts at {START:?}",
        first.pose
    );
}

#[test]
fn the_next_client_finds_the_robot_where_the_last_one_left_it() {
    // The base's odometry starts again at zero each time it is opened, and it is closed
    // when the planner's last client leaves: the planner must not take the robot back to
    // `pose_origin` at the next session.
    let server = server("pure_pursuit");
    let mut a = Nav::connect(&server, b'a');
    a.until_g(TIMEOUT, "the planner idle", |g| g.state == 0);
    a.goal(4000, 1000, 0);
    a.until_g(Duration::from_secs(60), "reached", |g| g.state == 3);
    let left = truth(&a.until_p(TIMEOUT, "at rest", |p| p.speed == 0 && p.turn_rate == 0));
    drop(a);
    // The base closes with the planner (its last holder): the next client's session
    // opens it again, and its odometry starts at zero where the robot was left.
    common::wait_closed(server.addr(), b'p');
    let mut b = Nav::connect(&server, b'a');
    let g = b.until_g(TIMEOUT, "the planner idle", |g| g.state == 0);
    let start = b.until_p(TIMEOUT, "a reading", |_| true);
    assert_eq!(
        (start.x, start.y),
        (0, 0),
        "the odometry did not start again"
    );
    let off = f64::from(g.pose[0] - left.0 as i32).hypot(f64::from(g.pose[1] - left.1 as i32));
    assert!(
        off <= 20.0,
        "the planner's pose {:?}, the robot at {left:?}: {off:.0} mm off",
        g.pose
    );
    b.goal(2500, 1000, 180);
    b.until_g(Duration::from_secs(60), "reached again", |g| g.state == 3);
    let p = b.until_p(TIMEOUT, "at rest", |p| p.speed == 0 && p.turn_rate == 0);
    // Where it really is: where it was left, then what its odometry says since.
    let (s, c) = left.2.to_radians().sin_cos();
    let (dx, dy) = (f64::from(p.x), f64::from(p.y));
    let (x, y) = (left.0 + c * dx - s * dy, left.1 + s * dx + c * dy);
    let d = (x - 2500.0).hypot(y - 1000.0);
    assert!(
        d <= 250.0,
        "ended at ({x:.0}, {y:.0}): {d:.0} mm from the goal"
    );
}

/// `n` seeded goals with `controller` (top speed `max_speed` m/s, top turn rate `max_turn`
/// deg/s) and `amcl` in the loop,
/// as the bench tours: each reached, no collision, within 2x the shortest time.
fn tour_with_amcl(controller: &str, max_speed: f64, max_turn: f64, n: usize) {
    // Goals at most 4 m apart: the tour's in a minute or so (VFH+ drives at 200 mm/s).
    let goals = tour::goals(&tour::maze_map(), n, 7, 4.0);
    let mut t = tour::Tour::start("test", controller);
    for g in goals {
        let o = t.go(g, |len| 3.0 * len / max_speed + 20.0);
        eprintln!("{controller}: {o:?}");
        let ideal = o.shortest_time(max_speed, max_turn.to_radians());
        assert!(
            o.reached() && o.collisions == 0 && o.seconds <= 2.0 * ideal,
            "{controller}: goal ({:.2}, {:.2}): state {}, {:.1} s against {ideal:.1} s, off {:?}, {} collisions, notices {:?}",
            o.goal.x,
            o.goal.y,
            o.state,
            o.seconds,
            o.error,
            o.collisions,
            o.notices
        );
    }
}

#[test]
fn the_maze_tour_with_amcl_in_the_loop_pure_pursuit() {
    tour_with_amcl("pure_pursuit", 0.5, 100.0, 2);
}

#[test]
fn the_maze_tour_with_amcl_in_the_loop_vfh() {
    tour_with_amcl("vfh", 0.2, 40.0, 2);
}
