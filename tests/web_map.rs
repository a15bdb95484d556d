//! The web endpoint's `/map` over real TCP with a real WebSocket client: the `mapfile`
//! driver's map (a PGM of several `x M t` tiles) served as a `foxglove.Grid` in the `map`
//! frame, cell for cell the grey of the map's image (rows from the bottom), in protobuf
//! and in JSON; a second subscription gets it at once; the simulated walls stay on
//! `/walls`.

use player::settings::Settings;
use player_testkit::foxglove_ws::{
    channel, channel_id, connect_with as connect, message_data, next_frame, next_json, next_op,
    runtime as rt, subscribe,
};
use player_testkit::{free_port, start_server_with, TestServer};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

const WAIT: Duration = Duration::from_secs(20);

/// The map's size in cells: 75,000, more than one tile (at most 60,000 cells each).
const W: usize = 300;
const H: usize = 250;

/// The image's pixels, top row first: a frame of walls (0), a block of unknown (205) in
/// the lower left, free floor (254) elsewhere. By map_server's rule (thresholds 0.65 and
/// 0.196) these are occupied, unknown and free, whose grey `/map` carries back.
fn pixels() -> Vec<u8> {
    let mut px = vec![254u8; W * H];
    for y in 0..H {
        for x in 0..W {
            if x < 2 || y < 2 || x >= W - 2 || y >= H - 2 {
                px[y * W + x] = 0;
            } else if x < 60 && y > H - 40 {
                px[y * W + x] = 205;
            }
        }
    }
    px
}

/// The grid's bytes as `/map` should carry them: the image's rows from the bottom.
fn expected() -> Vec<u8> {
    let px = pixels();
    px.chunks(W).rev().flatten().copied().collect()
}

fn map_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("player-web-map-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let mut pgm = format!("P5\n{W} {H}\n255\n").into_bytes();
    pgm.extend_from_slice(&pixels());
    std::fs::write(d.join("room.pgm"), pgm).unwrap();
    std::fs::write(
        d.join("room.yaml"),
        "image: room.pgm\nresolution: 0.05\norigin: [-2.5, 1.25, 0.0]\nnegate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n",
    )
    .unwrap();
    d
}

/// A simulated robot with the map of [`pixels`] as `M`, served on a web port.
fn start() -> (TestServer, u16) {
    let yaml = map_dir().join("room.yaml");
    let text = format!(
        r#"
[[robot]]
name = "bot"
[[robot.driver]]
driver = "sim"
devices = ["p", "l"]
[[robot.driver]]
driver = "mapfile"
devices = ["M"]
[robot.driver.params]
yaml = "{}"
"#,
        yaml.display()
    );
    let mut settings = Settings::from_toml(&text, "web map").unwrap();
    let port = free_port();
    settings.web.viewer_mut(0).web_port = Some(port);
    (start_server_with(settings, player::builtin_catalog()), port)
}

/// The next `messageData` payload on subscription `sub`.
async fn next_payload<S>(ws: &mut tokio_tungstenite::WebSocketStream<S>, sub: u32) -> Vec<u8>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    next_frame(ws, &format!("/map on subscription {sub}"), WAIT, |m| {
        let Message::Binary(b) = m else { return None };
        let (s, _, p) = message_data(&b)?;
        (s == sub).then(|| p.to_vec())
    })
    .await
}

#[test]
fn the_map_device_is_a_grid_cell_for_cell_in_both_encodings() {
    let (server, port) = start();
    rt().block_on(async {
        let mut ws = connect(port, "foxglove.websocket.v1", "").await.unwrap();
        let adv = next_op(&mut ws, "advertise").await;
        let channels = adv["channels"].as_array().unwrap();
        let schema_of = |topic: &str| {
            channels
                .iter()
                .find(|c| c["topic"] == topic)
                .map(|c| c["schemaName"].clone())
        };
        assert_eq!(schema_of("/map"), Some("foxglove.Grid".into()));
        assert_eq!(schema_of("/walls"), Some("foxglove.SceneUpdate".into()));
        let map = channel_id(&adv, "/map");
        subscribe(&mut ws, &[(1, map)]).await;
        use prost::Message as _;
        let g = foxglove::messages::Grid::decode(&next_payload(&mut ws, 1).await[..]).unwrap();
        assert_eq!(g.frame_id, "map");
        assert_eq!(
            (g.column_count, g.row_stride, g.cell_stride),
            (W as u32, W as u32, 1)
        );
        let cell = g.cell_size.unwrap();
        assert!((cell.x - 0.05).abs() < 1e-9 && (cell.y - 0.05).abs() < 1e-9);
        let at = g.pose.unwrap().position.unwrap();
        assert!(
            (at.x + 2.5).abs() < 1e-9 && (at.y - 1.25).abs() < 1e-9,
            "{at:?}"
        );
        assert_eq!(g.fields.len(), 1);
        assert_eq!(g.fields[0].offset, 0);
        // UINT8 in foxglove.PackedElementField.NumericType.
        assert_eq!(g.fields[0].r#type, 1);
        assert!(
            g.data[..] == expected()[..],
            "the image's grey, rows from the bottom"
        );
        // A second subscription gets the same map at once (no second download).
        let asked = Instant::now();
        subscribe(&mut ws, &[(2, map)]).await;
        let again = next_payload(&mut ws, 2).await;
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "{:?}",
            asked.elapsed()
        );
        let g2 = foxglove::messages::Grid::decode(&again[..]).unwrap();
        assert!(g2.data == g.data);
        ws.close(None).await.unwrap();

        // JSON: the same grid, its bytes in base64.
        let mut ws = connect(port, "foxglove.websocket.v1", "?encoding=json")
            .await
            .unwrap();
        let adv = next_op(&mut ws, "advertise").await;
        let ch = channel(&adv, "/map");
        assert_eq!(ch["encoding"], "json");
        let schema: serde_json::Value =
            serde_json::from_str(ch["schema"].as_str().unwrap()).unwrap();
        assert_eq!(
            schema["properties"]["data"]["contentEncoding"], "base64",
            "{schema}"
        );
        subscribe(&mut ws, &[(3, ch["id"].as_u64().unwrap())]).await;
        let v = next_json(&mut ws, 3, WAIT).await;
        assert_eq!(v["frame_id"], "map");
        assert_eq!(v["column_count"], W);
        assert_eq!(v["fields"][0]["type"], 1);
        use base64::Engine as _;
        let data = base64::engine::general_purpose::STANDARD
            .decode(v["data"].as_str().unwrap())
            .unwrap();
        assert!(data == expected(), "the same cells in JSON");
        ws.close(None).await.unwrap();
    });
    server.shutdown();
}
