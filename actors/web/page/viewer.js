// player's built-in viewer: a Foxglove WebSocket client (foxglove.websocket.v1) drawing the
// robot top-down and driving it. No libraries, nothing fetched from the internet.
//
// On a port serving a whole world (topics under the robots' names, and the world's
// `/robots`), the page shows one robot at a time (`?robot=NAME` in the page's address, or
// the picker), asks the server for that robot's channels only (`?robots=NAME` on the
// WebSocket), and with "all robots" draws every robot of the world from `/robots`.
"use strict";

const $ = (id) => document.getElementById(id);
const TEXT = new TextDecoder();
const ENCODE = new TextEncoder();

// What the page knows; `window.viewer` lets a test (or a curious person) look at it.
const state = {
  connected: false,
  robot: "",
  channels: new Map(), // channel id -> channel
  subs: new Map(), // subscription id -> topic
  pose: null, // {x, y, th} metres/radians in odom
  position: null,
  trail: [],
  laser: null, // {ranges, start, end}
  scan: null, // the full scan `L` when the robot has one: {ranges, start, end}
  sonar: null, // triangle points in base_link
  walls: null, // [[x1,y1,x2,y2]] in map
  mapToOdom: null, // {x, y, th}
  blobs: null,
  misc: null,
  ptz: null,
  gripper: null,
  devices: null,
  estop: false,
  counts: new Map(), // topic -> messages in the current second
  rates: new Map(), // topic -> messages per second
  bytes: 0,
  byteRate: 0,
  frames: 0, // frames drawn
  sent: 0, // commands sent
  world: false, // the port serves a world: topics under the robots' names
  names: [], // the world's robots
  picked: new URLSearchParams(location.search).get("robot") ?? "", // the robot shown
  all: null, // the world's robots from /robots: [{name, x, y, heading}] in map
  showAll: false,
};
window.viewer = state;

let ws = null;
let nextSub = 1;
const clientChannels = new Map(); // topic -> client channel id
let nextClientChannel = 1;

function log(text) {
  const el = $("log");
  const line = `${new Date().toLocaleTimeString()} ${text}\n`;
  el.textContent = (line + el.textContent).slice(0, 4000);
}

function connect() {
  // A world's port advertises the picked robot's channels only (a single robot's port
  // ignores the list). JSON: the page decodes every channel with JSON.parse (see
  // protobuf.rs).
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/` +
    `?robots=${encodeURIComponent(state.picked)}&encoding=json`;
  ws = new WebSocket(url, ["foxglove.websocket.v1"]);
  ws.binaryType = "arraybuffer";
  ws.onopen = () => {
    state.connected = true;
    $("conn").textContent = "connected";
    $("conn").className = "ok";
  };
  ws.onclose = () => {
    state.connected = false;
    $("conn").textContent = "disconnected: retrying";
    $("conn").className = "";
    state.channels.clear();
    state.subs.clear();
    clientChannels.clear();
    stopDriving(false);
    setTimeout(connect, reconnectNow ? 0 : 1000);
    reconnectNow = false;
  };
  ws.onmessage = (ev) => {
    if (typeof ev.data === "string") onText(JSON.parse(ev.data));
    else onBinary(ev.data);
  };
}

let reconnectNow = false;

// Shows robot `name` of the world: a new connection asking for its channels.
function pick(name) {
  if (name === state.picked) return;
  state.picked = name;
  const q = new URLSearchParams(location.search);
  q.set("robot", name);
  history.replaceState(null, "", `?${q}`);
  for (const k of ["pose", "position", "trail", "laser", "scan", "sonar", "mapToOdom", "misc", "ptz",
    "gripper", "blobs", "devices"]) state[k] = k === "trail" ? [] : null;
  reconnectNow = true;
  ws?.close();
}

// A world topic `/<robot>/<rest>` of the picked robot as the page's handlers name it.
function localTopic(topic) {
  if (!state.world || topic === "/walls" || topic === "/robots") return topic;
  const head = `/${state.picked}/`;
  return topic.startsWith(head) ? topic.slice(head.length - 1) : null;
}

// A topic the page publishes on, under the picked robot's name on a world's port.
function robotTopic(topic) {
  return state.world ? `/${state.picked}${topic}` : topic;
}

// Every robot of the world while "all robots" is ticked.
function watchAll() {
  const c = [...state.channels.values()].find((ch) => ch.topic === "/robots");
  if (!c) return;
  const sub = [...state.subs.entries()].find(([, t]) => t === "/robots")?.[0];
  if (state.showAll && sub === undefined) {
    const id = nextSub++;
    state.subs.set(id, "/robots");
    send({ op: "subscribe", subscriptions: [{ id, channelId: c.id }] });
  } else if (!state.showAll && sub !== undefined) {
    state.subs.delete(sub);
    send({ op: "unsubscribe", subscriptionIds: [sub] });
    state.all = null;
  }
}

function send(obj) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(obj));
}

function onText(msg) {
  switch (msg.op) {
    case "serverInfo":
      state.robot = msg.metadata?.robot || msg.name;
      $("title").textContent = `player: ${state.robot}`;
      document.title = `player: ${state.robot}`;
      break;
    case "advertise": {
      if (!state.world && msg.channels.some((c) => c.topic === "/robots")) {
        state.world = true;
        $("robot").hidden = false;
        $("allwrap").hidden = false;
        send({ op: "getParameters", parameterNames: ["robots"], id: "robots" });
      }
      const subscriptions = [];
      for (const c of msg.channels) {
        state.channels.set(c.id, c);
        const topic = localTopic(c.topic);
        if (topic === null || topic === "/robots") continue;
        // The page draws the walls; the map device's grid (`/map`) is for Foxglove.
        if (c.schemaName === "foxglove.Grid") continue;
        const id = nextSub++;
        state.subs.set(id, topic);
        subscriptions.push({ id, channelId: c.id });
      }
      if (subscriptions.length) send({ op: "subscribe", subscriptions });
      watchAll();
      break;
    }
    case "parameterValues": {
      const names = msg.parameters?.find((p) => p.name === "robots")?.value;
      if (!Array.isArray(names)) break;
      state.names = names;
      const sel = $("robot");
      sel.replaceChildren(...names.map((n) => new Option(n, n)));
      if (!state.picked || !names.includes(state.picked)) pick(names[0] ?? "");
      sel.value = state.picked;
      $("title").textContent = `player: ${state.picked} (${names.length} robots)`;
      document.title = `player: ${state.picked}`;
      break;
    }
    case "unadvertise":
      for (const id of msg.channelIds) state.channels.delete(id);
      break;
    case "status":
      log(`${["info", "warning", "error"][msg.level] ?? "status"}: ${msg.message}`);
      break;
    default:
      break;
  }
}

function onBinary(buf) {
  const view = new DataView(buf);
  if (view.getUint8(0) !== 1 || buf.byteLength < 13) return;
  const topic = state.subs.get(view.getUint32(1, true));
  if (!topic) return;
  state.bytes += buf.byteLength;
  state.counts.set(topic, (state.counts.get(topic) ?? 0) + 1);
  const msg = JSON.parse(TEXT.decode(new Uint8Array(buf, 13)));
  handlers[topic]?.(msg);
}

const handlers = {
  "/position": (m) => {
    state.position = m;
    const p = { x: m.x_mm / 1000, y: m.y_mm / 1000, th: (m.heading_deg * Math.PI) / 180 };
    const last = state.trail[state.trail.length - 1];
    if (!last || Math.hypot(last.x - p.x, last.y - p.y) > 0.02) {
      state.trail.push(p);
      if (state.trail.length > 2000) state.trail.shift();
    }
    state.pose = p;
    $("pose").textContent = `${p.x.toFixed(2)} m, ${p.y.toFixed(2)} m, ${m.heading_deg}\u00b0`;
    $("speed").textContent = `${m.speed_mm_s} mm/s, ${m.turn_rate_deg_s}\u00b0/s`;
    $("stall").textContent = m.stall ? "STALLED" : "no";
    $("stall").className = m.stall ? "on" : "";
  },
  "/laser": (m) => {
    state.laser = { ranges: m.ranges, start: m.start_angle, end: m.end_angle };
  },
  "/scan": (m) => {
    state.scan = { ranges: m.ranges, start: m.start_angle, end: m.end_angle };
  },
  "/sonar": (m) => {
    state.sonar = m.entities?.[0]?.triangles?.[0]?.points ?? null;
  },
  "/walls": (m) => {
    const pts = m.entities?.[0]?.lines?.[0]?.points ?? [];
    const walls = [];
    for (let i = 0; i + 1 < pts.length; i += 2) walls.push([pts[i].x, pts[i].y, pts[i + 1].x, pts[i + 1].y]);
    state.walls = walls;
  },
  "/tf_map": (m) => {
    const q = m.rotation;
    state.mapToOdom = { x: m.translation.x, y: m.translation.y, th: 2 * Math.atan2(q.z, q.w) };
  },
  "/misc": (m) => {
    state.misc = m;
    $("battery").textContent = `${m.battery_volts.toFixed(1)} V`;
    const bumpers = (el, bits) => {
      el.innerHTML = bits.map((b) => `<i class="${b ? "on" : ""}"></i>`).join("");
    };
    bumpers($("front"), m.front_bumpers);
    bumpers($("rear"), m.rear_bumpers);
  },
  "/gripper": (m) => {
    state.gripper = m;
    const paddles = m.paddles_open ? "open" : m.paddles_closed ? "closed" : "moving";
    const lift = m.lift_up ? "up" : m.lift_down ? "down" : "moving";
    const beams = m.inner_beam || m.outer_beam ? ", beam broken" : "";
    $("gripper").textContent = `paddles ${paddles}, lift ${lift}${beams}`;
  },
  "/ptz": (m) => {
    state.ptz = m;
    $("ptz").textContent = `pan ${m.pan_deg}\u00b0, tilt ${m.tilt_deg}\u00b0, zoom ${m.zoom}`;
  },
  "/vision/blobs": (m) => {
    state.blobs = m;
    drawCamera();
  },
  "/robots": (m) => {
    state.all = m.robots;
  },
  "/devices": (m) => {
    state.devices = m;
    if (typeof m.estop === "boolean") setEstop(m.estop);
    $("devices").innerHTML = m.devices
      .map(
        (d) =>
          `<tr><td>${d.code} ${d.name}</td><td class="state-${d.state.split(" ")[0]}">${d.state}</td>` +
          `<td>${d.rate_hz.toFixed(1)}</td><td>${d.access}</td></tr>`,
      )
      .join("");
  },
};

// ---- drawing -------------------------------------------------------------------------

const canvas = $("map");
const ctx2d = canvas.getContext("2d");
let scale = 60; // pixels per metre

function resize() {
  const r = canvas.getBoundingClientRect();
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.max(1, Math.round(r.width * dpr));
  canvas.height = Math.max(1, Math.round(r.height * dpr));
}
window.addEventListener("resize", resize);

function drawCamera() {
  const c = $("camera");
  const g = c.getContext("2d");
  g.fillStyle = "#111";
  g.fillRect(0, 0, c.width, c.height);
  const b = state.blobs;
  if (!b) return;
  const sx = c.width / b.width;
  const sy = c.height / b.height;
  const colours = ["#ff3333", "#33cc33", "#3366ff", "#ffcc1a", "#e64de6", "#1acccc"];
  for (const blob of b.blobs) {
    g.strokeStyle = colours[blob.channel % colours.length];
    g.fillStyle = g.strokeStyle;
    g.lineWidth = 2;
    g.strokeRect(blob.left * sx, blob.top * sy, (blob.right - blob.left) * sx, (blob.bottom - blob.top) * sy);
    g.beginPath();
    g.arc(blob.x * sx, blob.y * sy, 3, 0, 2 * Math.PI);
    g.fill();
  }
  g.fillStyle = "#aaa";
  g.font = "12px system-ui";
  g.fillText(`${b.blobs.length} blob${b.blobs.length === 1 ? "" : "s"}`, 6, 16);
}

function draw() {
  const w = canvas.width;
  const h = canvas.height;
  const dpr = window.devicePixelRatio || 1;
  const g = ctx2d;
  g.setTransform(1, 0, 0, 1, 0, 0);
  g.fillStyle = "#fff";
  g.fillRect(0, 0, w, h);
  const pose = state.pose ?? { x: 0, y: 0, th: 0 };
  const s = scale * dpr;
  // odom metres -> pixels, the robot in the middle, x to the right, y up.
  g.setTransform(s, 0, 0, -s, w / 2 - pose.x * s, h / 2 + pose.y * s);
  const px = 1 / s; // one pixel in metres

  // Grid, 1 m.
  g.lineWidth = px;
  g.strokeStyle = "#eee";
  g.beginPath();
  const half = Math.max(w, h) / s;
  for (let x = Math.floor(pose.x - half); x <= pose.x + half; x++) {
    g.moveTo(x, pose.y - half);
    g.lineTo(x, pose.y + half);
  }
  for (let y = Math.floor(pose.y - half); y <= pose.y + half; y++) {
    g.moveTo(pose.x - half, y);
    g.lineTo(pose.x + half, y);
  }
  g.stroke();

  // Walls of the simulated world (map frame -> odom).
  if (state.walls && state.mapToOdom) {
    const t = state.mapToOdom;
    const c = Math.cos(-t.th);
    const sn = Math.sin(-t.th);
    const toOdom = (x, y) => {
      const dx = x - t.x;
      const dy = y - t.y;
      return [c * dx - sn * dy, sn * dx + c * dy];
    };
    g.strokeStyle = "#333";
    g.lineWidth = 3 * px;
    g.beginPath();
    for (const [x1, y1, x2, y2] of state.walls) {
      const a = toOdom(x1, y1);
      const b = toOdom(x2, y2);
      g.moveTo(a[0], a[1]);
      g.lineTo(b[0], b[1]);
    }
    g.stroke();
  }

  // Every robot of the world (map frame -> odom), while "all robots" is ticked.
  if (state.showAll && state.all && state.mapToOdom) {
    const t = state.mapToOdom;
    const c = Math.cos(-t.th);
    const sn = Math.sin(-t.th);
    g.fillStyle = "rgba(96, 125, 139, 0.55)";
    for (const r of state.all) {
      if (typeof r.x !== "number" || r.name === state.picked) continue;
      const dx = r.x - t.x;
      const dy = r.y - t.y;
      g.beginPath();
      g.arc(c * dx - sn * dy, sn * dx + c * dy, 0.2, 0, 2 * Math.PI);
      g.fill();
    }
  }

  // Trail.
  if (state.trail.length > 1) {
    g.strokeStyle = "rgba(21, 101, 192, 0.55)";
    g.lineWidth = 2 * px;
    g.beginPath();
    g.moveTo(state.trail[0].x, state.trail[0].y);
    for (const p of state.trail) g.lineTo(p.x, p.y);
    g.stroke();
  }

  // Everything in the robot's frame from here.
  g.save();
  g.translate(pose.x, pose.y);
  g.rotate(pose.th);

  if (state.sonar) {
    g.fillStyle = "rgba(40, 120, 255, 0.16)";
    g.strokeStyle = "rgba(40, 120, 255, 0.45)";
    g.lineWidth = px;
    const p = state.sonar;
    for (let i = 0; i + 2 < p.length; i += 3) {
      g.beginPath();
      g.moveTo(p[i].x, p[i].y);
      g.lineTo(p[i + 1].x, p[i + 1].y);
      g.lineTo(p[i + 2].x, p[i + 2].y);
      g.closePath();
      g.fill();
      g.stroke();
    }
  }

  // The full scan when there is one (the sensor's own angles), else the 361-reading view.
  const scan = state.scan ?? state.laser;
  if (scan) {
    const { ranges, start, end } = scan;
    const step = (end - start) / Math.max(1, ranges.length - 1);
    g.fillStyle = "rgba(255, 235, 235, 0.6)";
    g.beginPath();
    g.moveTo(0, 0);
    ranges.forEach((r, i) => g.lineTo(r * Math.cos(start + i * step), r * Math.sin(start + i * step)));
    g.closePath();
    g.fill();
    g.fillStyle = "rgb(220, 30, 30)";
    const dot = 3 * px;
    ranges.forEach((r, i) => {
      if (r <= 0) return;
      g.fillRect(r * Math.cos(start + i * step) - dot / 2, r * Math.sin(start + i * step) - dot / 2, dot, dot);
    });
  }

  // PTZ: the camera's field of view.
  if (state.ptz) {
    const pan = (state.ptz.pan_deg * Math.PI) / 180;
    const fov = ((48.8 - (44.4 * state.ptz.zoom) / 1023) * Math.PI) / 180;
    g.strokeStyle = "rgba(255, 160, 0, 0.8)";
    g.lineWidth = 1.5 * px;
    g.beginPath();
    g.moveTo(1.2 * Math.cos(pan - fov / 2), 1.2 * Math.sin(pan - fov / 2));
    g.lineTo(0, 0);
    g.lineTo(1.2 * Math.cos(pan + fov / 2), 1.2 * Math.sin(pan + fov / 2));
    g.stroke();
  }

  // The robot: a Pioneer-sized body, bumpers lit when pressed.
  const stalled = state.position?.stall;
  g.fillStyle = stalled ? "#ef9a9a" : "#90caf9";
  g.strokeStyle = "#0d47a1";
  g.lineWidth = 2 * px;
  g.beginPath();
  g.arc(0, 0, 0.25, 0, 2 * Math.PI);
  g.fill();
  g.stroke();
  g.beginPath();
  g.moveTo(0, 0);
  g.lineTo(0.3, 0);
  g.stroke();
  const bump = (bits, centre) => {
    if (!bits) return;
    bits.forEach((on, i) => {
      if (!on) return;
      const a = centre + ((i - 2) * Math.PI) / 8;
      g.strokeStyle = "#e53935";
      g.lineWidth = 5 * px;
      g.beginPath();
      g.arc(0, 0, 0.27, a - 0.18, a + 0.18);
      g.stroke();
    });
  };
  bump(state.misc?.front_bumpers?.slice().reverse(), 0);
  bump(state.misc?.rear_bumpers, Math.PI);
  g.restore();

  state.frames++;
  requestAnimationFrame(draw);
}

// ---- rates ---------------------------------------------------------------------------

setInterval(() => {
  state.rates = new Map(state.counts);
  state.counts.clear();
  state.byteRate = state.bytes;
  state.bytes = 0;
  const laser = state.rates.get("/laser") ?? 0;
  const pos = state.rates.get("/position") ?? 0;
  $("rate").textContent = `${(state.byteRate / 1024).toFixed(1)} kB/s \u00b7 laser ${laser} Hz \u00b7 position ${pos} Hz`;
}, 1000);

// ---- teleop --------------------------------------------------------------------------

const SPEED = 0.3; // m/s
const TURN = 0.7; // rad/s
const held = new Set();
let driveTimer = null;

function clientChannel(topic, schemaName) {
  if (clientChannels.has(topic)) return clientChannels.get(topic);
  const id = nextClientChannel++;
  clientChannels.set(topic, id);
  send({ op: "advertise", channels: [{ id, topic, encoding: "json", schemaName }] });
  return id;
}

function publish(topic, schemaName, obj) {
  if (!ws || ws.readyState !== WebSocket.OPEN) return;
  const id = clientChannel(topic, schemaName);
  const body = ENCODE.encode(JSON.stringify(obj));
  const frame = new Uint8Array(5 + body.length);
  frame[0] = 1;
  new DataView(frame.buffer).setUint32(1, id, true);
  frame.set(body, 5);
  ws.send(frame);
}

function twist() {
  let v = 0;
  let w = 0;
  if (held.has("ArrowUp")) v += SPEED;
  if (held.has("ArrowDown")) v -= SPEED;
  if (held.has("ArrowLeft")) w += TURN;
  if (held.has("ArrowRight")) w -= TURN;
  return { linear: { x: v, y: 0, z: 0 }, angular: { x: 0, y: 0, z: w } };
}

function sendDrive() {
  publish(robotTopic("/cmd_vel"), "geometry_msgs/Twist", twist());
  state.sent++;
}

function press(key) {
  if (held.has(key)) return;
  held.add(key);
  document.querySelector(`#pad [data-key="${key}"]`)?.classList.add("held");
  sendDrive();
  if (!driveTimer) driveTimer = setInterval(sendDrive, 100); // 10 Hz while held
}

function release(key) {
  if (!held.delete(key)) return;
  document.querySelector(`#pad [data-key="${key}"]`)?.classList.remove("held");
  if (held.size === 0) stopDriving(true);
  else sendDrive();
}

function stopDriving(sendStop) {
  held.clear();
  document.querySelectorAll("#pad .held").forEach((b) => b.classList.remove("held"));
  if (driveTimer) clearInterval(driveTimer);
  driveTimer = null;
  if (sendStop) publish(robotTopic("/cmd_vel"), "geometry_msgs/Twist", twist()); // all zero: stop
}

const KEYS = { ArrowUp: "ArrowUp", ArrowDown: "ArrowDown", ArrowLeft: "ArrowLeft", ArrowRight: "ArrowRight",
  w: "ArrowUp", s: "ArrowDown", a: "ArrowLeft", d: "ArrowRight" };
window.addEventListener("keydown", (e) => {
  const k = KEYS[e.key];
  if (!k) return;
  e.preventDefault();
  press(k);
});
window.addEventListener("keyup", (e) => {
  const k = KEYS[e.key];
  if (!k) return;
  e.preventDefault();
  release(k);
});
window.addEventListener("blur", () => stopDriving(held.size > 0));
document.addEventListener("visibilitychange", () => {
  if (document.hidden) stopDriving(held.size > 0);
});
for (const b of document.querySelectorAll("#pad button")) {
  const k = b.dataset.key;
  b.addEventListener("pointerdown", (e) => {
    e.preventDefault();
    b.setPointerCapture?.(e.pointerId);
    press(k);
  });
  for (const ev of ["pointerup", "pointercancel", "lostpointercapture"]) b.addEventListener(ev, () => release(k));
  b.addEventListener("contextmenu", (e) => e.preventDefault());
}

$("motors").addEventListener("change", (e) => {
  publish(robotTopic("/motor_power"), "player.MotorPower", { on: e.target.checked });
  log(`motor power ${e.target.checked ? "on" : "off"} asked`);
});

function setEstop(latched) {
  state.estop = latched;
  $("estop").classList.toggle("latched", latched);
  $("estop").textContent = latched ? "RELEASE" : "E-STOP";
}
$("estop").addEventListener("click", () => {
  const latch = !state.estop;
  stopDriving(true);
  publish(robotTopic("/estop"), "player.EStop", { latch });
  log(latch ? "emergency stop asked" : "e-stop release asked");
});

$("zin").addEventListener("click", () => (scale = Math.min(400, scale * 1.25)));
$("zout").addEventListener("click", () => (scale = Math.max(5, scale / 1.25)));
canvas.addEventListener("wheel", (e) => {
  e.preventDefault();
  scale = Math.min(400, Math.max(5, scale * (e.deltaY < 0 ? 1.1 : 1 / 1.1)));
}, { passive: false });

$("robot").addEventListener("change", (e) => {
  stopDriving(held.size > 0);
  pick(e.target.value);
});
$("all").addEventListener("change", (e) => {
  state.showAll = e.target.checked;
  watchAll();
});

resize();
requestAnimationFrame(draw);
connect();
