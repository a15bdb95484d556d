//! The PTZ camera, ACTS blobs of coloured objects, and the gripper.

use super::*;

#[test]
fn ptz_slews_and_clamps() {
    let mut r = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    assert_eq!(
        r.ptz(),
        PtzReading {
            pan: 0,
            tilt: 0,
            zoom: 0
        }
    );
    r.set_ptz(90, -20, 800);
    run(&mut r, 0.1);
    let p = r.ptz();
    assert!(p.pan > 0 && p.pan < 90, "{p:?}");
    assert!(p.tilt < 0 && p.tilt > -20, "{p:?}");
    assert!(p.zoom > 0 && p.zoom < 800, "{p:?}");
    run(&mut r, 2.0);
    assert_eq!(
        r.ptz(),
        PtzReading {
            pan: 90,
            tilt: -20,
            zoom: 800
        }
    );
    r.set_ptz(i16::MAX, i16::MIN, i16::MAX);
    run(&mut r, 5.0);
    assert_eq!(
        r.ptz(),
        PtzReading {
            pan: 100,
            tilt: -25,
            zoom: ZOOM_MAX
        }
    );
    r.set_ptz(-300, 300, -300);
    run(&mut r, 5.0);
    assert_eq!(
        r.ptz(),
        PtzReading {
            pan: -100,
            tilt: 25,
            zoom: 0
        }
    );
}

fn ball(channel: u8, x: f64, y: f64) -> ColouredObject {
    ColouredObject {
        channel,
        center: (x, y),
        shape: ObjectShape::Circle { radius: 150.0 },
        height: 300.0,
    }
}

#[test]
fn object_ahead_makes_one_centred_blob() {
    let map = WorldMap::new("t", 10000.0, 10000.0).with_object(ball(3, 7000.0, 5000.0));
    let mut r = robot_in(map, 5000.0, 5000.0, 0.0);
    let blobs = r.vision();
    assert_eq!(blobs.len(), 1, "{blobs:?}");
    let b = blobs[0];
    assert_eq!(b.channel, 3);
    assert!((79..=81).contains(&b.x), "{b:?}");
    // 150 mm at 2 m subtends +-4.3 degrees: about 26 pixels wide at zoom 0.
    let width = u32::from(b.right - b.left) + 1;
    assert!((24..=29).contains(&width), "{b:?}");
    assert_eq!(b.area, width * (u32::from(b.bottom - b.top) + 1));
    assert!(b.left < b.x && b.x < b.right && b.top <= b.y && b.y <= b.bottom);
    // The camera is 300 mm up and the ball 300 mm tall: it is in the lower half of the image.
    assert!(b.y > 60 && b.bottom < 120, "{b:?}");

    // Zooming in makes it bigger.
    r.set_ptz(0, 0, 512);
    run(&mut r, 1.0);
    let zoomed = r.vision();
    assert_eq!(zoomed.len(), 1);
    assert!(zoomed[0].area > b.area);

    // Panned 90 degrees away it is out of view.
    r.set_ptz(90, 0, 0);
    run(&mut r, 2.0);
    assert!(r.vision().is_empty());

    // Panned back, and the robot turned left 15 degrees: the ball sits right of centre.
    r.set_ptz(0, 0, 0);
    run(&mut r, 2.0);
    r.set_velocity(0, 30);
    run(&mut r, 0.5);
    r.stop();
    let b = r.vision()[0];
    assert!(b.x > 100, "{b:?}");
}

#[test]
fn tilting_moves_the_blob_in_the_image() {
    let map = WorldMap::new("t", 10000.0, 10000.0).with_object(ball(0, 7000.0, 5000.0));
    let mut r = robot_in(map, 5000.0, 5000.0, 0.0);
    let level = r.vision()[0];
    r.set_ptz(0, -10, 0);
    run(&mut r, 1.0);
    let down = r.vision()[0];
    assert!(down.y < level.y, "{level:?} {down:?}");
}

#[test]
fn hidden_objects_make_no_blob() {
    let map = WorldMap::new("t", 10000.0, 10000.0)
        .with_object(ball(1, 7000.0, 5000.0))
        .with_box((6000.0, 4900.0), (6100.0, 5100.0));
    let r = robot_in(map, 5000.0, 5000.0, 0.0);
    assert!(r.vision().is_empty());
}

#[test]
fn blobs_sort_by_channel_then_area_and_cap_at_ten() {
    // Robot at (10000, 10000) facing +x. A channel-5 ball 23 degrees left and a channel-2 ball
    // 23 degrees right, 1.5 m away; twelve channel-7 balls fanned out from -16 to +16 degrees,
    // 5 to 6.1 m away (farther ones smaller), never hiding one another.
    let at = |channel: u8, bearing_deg: f64, dist: f64| {
        let (s, c) = bearing_deg.to_radians().sin_cos();
        ball(channel, 10000.0 + dist * c, 10000.0 + dist * s)
    };
    let mut map = WorldMap::new("t", 20000.0, 20000.0)
        .with_object(at(5, 23.0, 1500.0))
        .with_object(at(2, -23.0, 1500.0));
    for i in 0..12 {
        let i = f64::from(i);
        map = map.with_object(at(7, -16.0 + i * 32.0 / 11.0, 5000.0 + 100.0 * i));
    }
    let r = robot_in(map, 10000.0, 10000.0, 0.0);
    let blobs = r.vision();
    let channels: Vec<u8> = blobs.iter().map(|b| b.channel).collect();
    assert_eq!(channels[..2], [2, 5], "{blobs:?}");
    let sevens: Vec<&Blob> = blobs.iter().filter(|b| b.channel == 7).collect();
    assert_eq!(sevens.len(), 10, "{blobs:?}");
    assert!(sevens.windows(2).all(|w| w[0].area >= w[1].area));
    // The two largest channel-7 blobs are the two nearest balls (leftmost in view = rightmost
    // in the image is the farthest).
    assert!(sevens[0].x > 80 && sevens[0].x > sevens[9].x, "{sevens:?}");
}

#[test]
fn box_object_is_seen() {
    let map = WorldMap::new("t", 10000.0, 10000.0).with_object(ColouredObject {
        channel: 1,
        center: (6500.0, 5000.0),
        shape: ObjectShape::Rect {
            dx: 400.0,
            dy: 400.0,
        },
        height: 500.0,
    });
    let r = robot_in(map, 5000.0, 5000.0, 0.0);
    let blobs = r.vision();
    assert_eq!(blobs.len(), 1);
    // The near corners are +-200 mm across at 1300 mm: columns 80 -+ 176.6 * 200 / 1300.
    let b = blobs[0];
    assert!((53..=57).contains(&(b.right - b.left + 1)), "{b:?}");
}

#[test]
fn gripper_commands_and_state() {
    let mut r = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    assert_eq!(r.gripper().state, state::PADDLES_CLOSED | state::LIFT_UP);
    r.gripper_command(cmd::GRIP_DEPLOY, 0);
    run(&mut r, 0.5);
    assert_eq!(
        r.gripper().state,
        state::PADDLES_MOVING | state::LIFT_MOVING
    );
    run(&mut r, 2.0);
    let g = r.gripper();
    assert_eq!(g.state, state::PADDLES_OPEN | state::LIFT_DOWN);
    assert_eq!(g.beams & 0x30, 0x30);
    assert_eq!(g.beams & (beams::OUTER_BEAM | beams::INNER_BEAM), 0);
}
