// The official Foxglove WebSocket client library against the real server: every advertised
// channel is subscribed and messages of each are decoded; a Twist published on /cmd_vel
// moves the robot. A recording made with -record and served with -replay is paused and
// sought as Foxglove's timeline does it.
import { test } from "node:test";
import assert from "node:assert/strict";
import foxglove from "@foxglove/ws-protocol";
import WebSocket from "ws";

const { FoxgloveClient } = foxglove;
import { foxgloveClient, sleep, startPlayer, within } from "./harness.mjs";
import { commandOnce, readLaser } from "./player_tcp.mjs";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const decoder = new TextDecoder();

test("the Foxglove client library subscribes to every channel, decodes each, calls the services and reads the parameters", async () => {
  const player = await startPlayer();
  try {
    // JSON throughout (the default is protobuf for the foxglove.* channels: protobuf.test.mjs).
    const client = foxgloveClient(`${player.ws}/?encoding=json`);
    // Both listeners first: the server sends serverInfo and advertise back to back.
    const gotInfo = within(20_000, "serverInfo", (done) => client.on("serverInfo", done));
    const gotChannels = within(20_000, "advertise", (done) => client.on("advertise", done));
    const gotServices = within(20_000, "advertiseServices", (done) => client.on("advertiseServices", done));
    const info = await gotInfo;
    assert.ok(info.capabilities.includes("clientPublish"));
    assert.deepEqual(info.supportedEncodings, ["json"]);
    const channels = await gotChannels;
    const topics = channels.map((c) => c.topic).sort();
    for (const t of ["/laser", "/pose", "/tf", "/sonar", "/misc", "/walls", "/position"]) {
      assert.ok(topics.includes(t), `${t} advertised (got ${topics})`);
    }
    const bySub = new Map();
    const decoded = new Map();
    for (const c of channels) {
      assert.equal(c.encoding, "json");
      assert.equal(c.schemaEncoding, "jsonschema");
      const schema = JSON.parse(c.schema);
      assert.equal(schema.type, "object", `${c.topic} schema`);
      bySub.set(client.subscribe(c.id), c);
    }
    const statuses = [];
    client.on("status", (s) => statuses.push(s));
    await within(30_000, "a message on every channel", (done) => {
      client.on("message", ({ subscriptionId, timestamp, data }) => {
        const c = bySub.get(subscriptionId);
        assert.ok(c, `message for unknown subscription ${subscriptionId}`);
        assert.ok(timestamp > 1_600_000_000n * 1_000_000_000n, `${c.topic} timestamp ${timestamp}`);
        const msg = JSON.parse(decoder.decode(data));
        if (!decoded.has(c.topic)) decoded.set(c.topic, msg);
        if (decoded.size === channels.length) done();
      });
    });
    // What each decodes to, by schema.
    const laser = decoded.get("/laser");
    assert.equal(laser.ranges.length, 361);
    assert.ok(laser.ranges.some((r) => r > 0), "the laser sees walls");
    assert.equal(laser.frame_id, "base_link");
    const tf = decoded.get("/tf");
    assert.equal(tf.parent_frame_id, "odom");
    assert.equal(tf.child_frame_id, "base_link");
    assert.equal(typeof decoded.get("/pose").pose.orientation.w, "number");
    const sonar = decoded.get("/sonar").entities[0];
    assert.equal(sonar.triangles[0].points.length, 48);
    assert.equal(decoded.get("/misc").front_bumpers.length, 5);
    assert.ok(decoded.get("/misc").battery_volts > 10);
    assert.ok(decoded.get("/walls").entities[0].lines[0].points.length >= 8, "walls");
    assert.equal(decoded.get("/tf_map").child_frame_id, "odom");
    assert.ok(Array.isArray(decoded.get("/vision/blobs").blobs));
    assert.ok(Array.isArray(decoded.get("/vision").circles));
    assert.equal(typeof decoded.get("/ptz").pan_deg, "number");
    assert.equal(typeof decoded.get("/gripper").state, "number");
    assert.ok(decoded.get("/devices").devices.some((d) => d.code === "l"));

    // Teleop as Foxglove's panel does it: a Twist on /cmd_vel, then silence.
    const cmd = client.advertise({ topic: "/cmd_vel", encoding: "json", schemaName: "geometry_msgs/Twist" });
    const poseSub = [...bySub].find(([, c]) => c.topic === "/position")[0];
    const devicesSub = [...bySub].find(([, c]) => c.topic === "/devices")[0];
    let latest = null;
    let latestDevices = null;
    client.on("message", ({ subscriptionId, data }) => {
      if (subscriptionId === poseSub) latest = JSON.parse(decoder.decode(data));
      if (subscriptionId === devicesSub) latestDevices = JSON.parse(decoder.decode(data));
    });
    const twist = new TextEncoder().encode(
      JSON.stringify({ linear: { x: 0.3, y: 0, z: 0 }, angular: { x: 0, y: 0, z: 0 } }),
    );
    const start = Date.now();
    let moved = false;
    while (Date.now() - start < 20_000 && !moved) {
      client.sendMessage(cmd, twist);
      await new Promise((r) => setTimeout(r, 100));
      moved = latest !== null && latest.speed_mm_s > 0 && latest.x_mm > 20;
    }
    assert.ok(moved, `the robot drove forward: ${JSON.stringify(latest)}`);
    // Silence, as Foxglove's Teleop panel does on release: the command watchdog stops the
    // robot and says so in a status message.
    const waitFor = async (what, fn) => {
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && !fn()) await new Promise((r) => setTimeout(r, 100));
      assert.ok(fn(), what);
    };
    await waitFor("the watchdog stopped the robot", () => latest.speed_mm_s === 0);
    await waitFor("a watchdog status", () => statuses.some((s) => /watchdog|no command/i.test(s.message)));
    // The emergency stop: latched, commands are dropped; released, they drive again.
    const estop = client.advertise({ topic: "/estop", encoding: "json", schemaName: "player.EStop" });
    const send = (ch, obj) => client.sendMessage(ch, new TextEncoder().encode(JSON.stringify(obj)));
    send(estop, { latch: true });
    await waitFor("e-stop latched in /devices", () => latestDevices?.estop === true);
    const x0 = latest.x_mm;
    for (let i = 0; i < 15; i++) {
      client.sendMessage(cmd, twist);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(latest.speed_mm_s, 0, "commands dropped while the e-stop is latched");
    assert.ok(Math.abs(latest.x_mm - x0) < 5, "did not move while latched");
    send(estop, { latch: false });
    await waitFor("e-stop released in /devices", () => latestDevices?.estop === false);
    // Unadvertising the command channel gives up write access: the robot stops.
    client.unadvertise(cmd);
    await waitFor("stopped after unadvertise", () => latest.speed_mm_s === 0);
    // Services: the e-stop latched and released by a call (a status says so), motor power
    // and odometry reset as configs of the position device, an unknown device refused.
    assert.ok(info.capabilities.includes("services"));
    const services = new Map((await gotServices).map((sv) => [sv.name, sv]));
    for (const n of ["/estop", "/motor_power", "/reset_odometry", "/config"]) {
      assert.ok(services.has(n), `service ${n} advertised (got ${[...services.keys()]})`);
      assert.equal(services.get(n).request.encoding, "json");
    }
    let callId = 100;
    const call = (name, req) =>
      within(10_000, `service ${name}`, (done) => {
        const id = ++callId;
        const onResp = (r) => {
          if (r.callId !== id) return;
          done({ ok: true, body: JSON.parse(decoder.decode(r.data)) });
        };
        const onFail = (f) => {
          if (f.callId !== id) return;
          done({ ok: false, message: f.message });
        };
        client.on("serviceCallResponse", onResp);
        client.on("serviceCallFailure", onFail);
        client.sendServiceCallRequest({
          serviceId: services.get(name).id,
          callId: id,
          encoding: "json",
          data: new TextEncoder().encode(JSON.stringify(req)),
        });
      });
    const statusesBefore = statuses.length;
    const latched = await call("/estop", { latch: true });
    assert.deepEqual(latched, { ok: true, body: { latched: true, changed: true } });
    await waitFor("e-stop latched by the service", () => latestDevices?.estop === true);
    await waitFor("an e-stop status", () =>
      statuses.slice(statusesBefore).some((s) => s.level === 2 && /emergency stop/.test(s.message)),
    );
    const released = await call("/estop", { latch: false });
    assert.deepEqual(released, { ok: true, body: { latched: false, changed: true } });
    await waitFor("e-stop released by the service", () => latestDevices?.estop === false);
    assert.deepEqual(await call("/motor_power", { on: true }), { ok: true, body: { ok: true, message: "" } });
    assert.deepEqual(await call("/reset_odometry", {}), { ok: true, body: { ok: true, message: "" } });
    const unknown = await call("/config", { device: "Q", code: "m", args: [1] });
    assert.equal(unknown.ok, false, "a config to a device the robot lacks fails");
    const bad = await call("/config", { device: "p", code: "m", args: [256] });
    assert.equal(bad.ok, false, "args are bytes");
    // Parameters: the robot's settings, read-only.
    assert.ok(info.capabilities.includes("parameters"));
    const params = (names, id) =>
      within(10_000, `parameters ${id}`, (done) => {
        client.on("parameterValues", (p) => {
          if (p.id === id) done(new Map(p.parameters.map((x) => [x.name, x.value])));
        });
        client.getParameters(names, id);
      });
    const all = await params([], "all");
    assert.equal(all.get("robot"), "pioneer");
    assert.ok(all.get("devices").includes("p"));
    assert.equal(all.get("p.driver"), "sim");
    assert.equal(all.get("p.command_timeout"), 0.5);
    const one = await params(["p.command_timeout"], "one");
    assert.deepEqual([...one.keys()], ["p.command_timeout"]);
    // The robot's name is read-only: refused with a status, unchanged.
    const statusCount = statuses.length;
    const answer = within(10_000, "setParameters answer", (done) => {
      client.on("parameterValues", (p) => {
        if (p.id === "set") done(p.parameters);
      });
    });
    client.setParameters([{ name: "robot", value: "other" }], "set");
    assert.deepEqual(await answer, [{ name: "robot", value: "pioneer" }], "unchanged");
    await waitFor("a read-only status", () =>
      statuses.slice(statusCount).some((s) => /read-only/.test(s.message)),
    );
    // Errors: only the e-stop's own.
    assert.deepEqual(
      statuses.filter((s) => s.level >= 2 && !/emergency stop/.test(s.message)),
      [],
      "no error status",
    );
    client.close();
  } finally {
    const r = await player.stop();
    assert.equal(r.code, 0, `player exit ${JSON.stringify(r)}\n${player.log()}`);
  }
});

// The key of the keyed server below: a client without it may read, not command.
const KEY = "fgops-key";

/** A Foxglove client on `url` collecting its statuses, removed status ids, parameter updates (no id) and clock. */
async function open(url) {
  const client = foxgloveClient(url);
  const seen = { statuses: [], removed: [], updates: [], times: [], graph: [] };
  client.on("status", (s) => seen.statuses.push(s));
  client.on("removeStatus", (r) => seen.removed.push(...r.statusIds));
  client.on("parameterValues", (p) => {
    if (p.id === undefined) seen.updates.push(...p.parameters);
  });
  client.on("time", ({ timestamp }) => seen.times.push({ at: Date.now(), timestamp }));
  client.on("connectionGraphUpdate", (g) => seen.graph.push(g));
  const gotChannels = within(20_000, "advertise", (done) => client.on("advertise", done));
  const info = await within(20_000, "serverInfo", (done) => client.on("serverInfo", done));
  const channels = await gotChannels;
  return { client, info, channels, ...seen };
}

async function waitFor(what, fn, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && !fn()) await sleep(50);
  assert.ok(fn(), what);
}

/** getParameters(names) on `c`, answered by id. */
let paramId = 0;
function getParams(c, names) {
  const id = `get${++paramId}`;
  return within(10_000, `parameters ${id}`, (done) => {
    c.client.on("parameterValues", (p) => {
      if (p.id === id) done(new Map(p.parameters.map((x) => [x.name, x.value])));
    });
    c.client.getParameters(names, id);
  });
}

/** setParameters(list) on `c`: the answer's values by name. */
function setParams(c, list) {
  const id = `set${++paramId}`;
  return within(10_000, `setParameters ${id}`, (done) => {
    c.client.on("parameterValues", (p) => {
      if (p.id === id) done(new Map(p.parameters.map((x) => [x.name, x.value])));
    });
    c.client.setParameters(list, id);
  });
}

/** The connection graph a client has, from its updates: topic -> ids. */
function graphOf(updates) {
  const published = new Map();
  const subscribed = new Map();
  const services = new Map();
  for (const u of updates) {
    for (const t of u.publishedTopics) published.set(t.name, t.publisherIds);
    for (const t of u.subscribedTopics) subscribed.set(t.name, t.subscriberIds);
    for (const s of u.advertisedServices) services.set(s.name, s.providerIds);
    for (const t of u.removedTopics) {
      published.delete(t);
      subscribed.delete(t);
    }
    for (const s of u.removedServices) services.delete(s);
  }
  return { published, subscribed, services };
}

test("parameters are set only with write access and set the real watchdog; the e-stop, the clock and the connection graph reach Foxglove clients", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "player-web-"));
  const config = path.join(dir, "keyed.toml");
  fs.writeFileSync(
    config,
    `[access]\nkey = "${KEY}"\nkeyless = "read"\n\n[[robot]]\nname = "pioneer"\n\n` +
      `[[robot.driver]]\ndriver = "sim"\ndevices = ["p", "s", "m", "g", "l", "z", "v"]\n\n` +
      `[robot.driver.params]\nworld = "room"\nmotors_on = true\n`,
  );
  const player = await startPlayer(["--config", config]);
  const tcp = [];
  try {
    const reader = await open(player.ws);
    const writer = await open(`${player.ws}/?key=${KEY}`);
    for (const cap of ["parameters", "parametersSubscribe", "connectionGraph", "time"]) {
      assert.ok(reader.info.capabilities.includes(cap), `${cap} advertised: ${reader.info.capabilities}`);
    }
    // The server's clock: the wall clock, here, before any message.
    await waitFor("a time message", () => reader.times.length > 0);
    const t = reader.times[0];
    assert.ok(Math.abs(Number(t.timestamp / 1_000_000n) - t.at) < 2_000, `server time ${t.timestamp} at ${t.at}`);

    // Reading: the configured watchdog. Setting without write access: an error status,
    // nothing changed; the answer carries the value in force.
    assert.equal((await getParams(reader, ["p.command_timeout"])).get("p.command_timeout"), 0.5);
    reader.client.subscribeParameterUpdates(["p.command_timeout"]);
    const refused = await setParams(reader, [{ name: "p.command_timeout", value: 2 }]);
    assert.equal(refused.get("p.command_timeout"), 0.5, "unchanged without write access");
    await waitFor("a refusal status", () =>
      reader.statuses.some((s) => s.level === 2 && /may not command/.test(s.message)),
    );
    assert.equal((await getParams(writer, ["p.command_timeout"])).get("p.command_timeout"), 0.5);
    // With write access: set, answered, and the reader's subscription hears of it.
    const set = await setParams(writer, [{ name: "p.command_timeout", value: 2 }]);
    assert.equal(set.get("p.command_timeout"), 2);
    await waitFor("the reader's parameter update", () =>
      reader.updates.some((p) => p.name === "p.command_timeout" && p.value === 2),
    );
    assert.equal((await getParams(reader, ["p.command_timeout"])).get("p.command_timeout"), 2);
    const outOfRange = await setParams(writer, [{ name: "p.command_timeout", value: 0 }]);
    assert.equal(outOfRange.get("p.command_timeout"), 2, "0 (off) is the configuration's");

    // The real watchdog, for a TCP client too: one command, then silence, holds 2 s now
    // (the configured 0.5 s before, and a web writer's own hold is at most 1.2 s).
    const position = reader.channels.find((c) => c.topic === "/position");
    reader.client.subscribe(position.id);
    const drive = await commandOnce(player.gp, KEY, 200);
    tcp.push(drive);
    await waitFor("the robot moves", () => drive.samples.some((s) => s.speed_mm_s > 0));
    await waitFor("the watchdog stopped it", () => {
      const i = drive.samples.findIndex((s) => s.speed_mm_s > 0);
      return i >= 0 && drive.samples.slice(i).some((s) => s.speed_mm_s === 0);
    });
    const moving = drive.samples.findIndex((s) => s.speed_mm_s > 0);
    const stoppedAt = drive.samples.slice(moving).find((s) => s.speed_mm_s === 0).at;
    const held = stoppedAt - drive.sentAt;
    assert.ok(held >= 1_700, `the command held ${held} ms: the new 2 s, not the old 0.5 s`);
    assert.ok(held <= 3_500, `the command held ${held} ms: stopped after 2 s`);
    await waitFor("a watchdog status naming 2 s", () =>
      reader.statuses.some((s) => /no command for 2\.00 s/.test(s.message)),
    );

    // This connection's rate cap (write access): /position at 10 Hz, capped to 2 Hz.
    const count = async (c, ms) => {
      const sub = c.client.subscribe(c.channels.find((x) => x.topic === "/position").id);
      let n = 0;
      const on = ({ subscriptionId }) => {
        if (subscriptionId === sub) n++;
      };
      c.client.on("message", on);
      await sleep(ms);
      c.client.off("message", on);
      c.client.unsubscribe(sub);
      return n;
    };
    const uncapped = await count(writer, 2_000);
    assert.ok(uncapped >= 12, `uncapped: ${uncapped} messages in 2 s`);
    assert.equal((await setParams(writer, [{ name: "web.max_rate_hz", value: 2 }])).get("web.max_rate_hz"), 2);
    const capped = await count(writer, 3_000);
    assert.ok(capped >= 3 && capped <= 8, `capped at 2 Hz: ${capped} messages in 3 s`);
    assert.equal((await getParams(reader, ["web.max_rate_hz"])).get("web.max_rate_hz"), 0, "each connection its own");
    console.log(`watchdog at 2 s: the command held ${held} ms; /position ${uncapped} in 2 s, capped at 2 Hz ${capped} in 3 s`);

    // The e-stop: a status with an id for every client, removed when released.
    const estop = writer.client.advertise({ topic: "/estop", encoding: "json", schemaName: "player.EStop" });
    const publish = (obj) => writer.client.sendMessage(estop, new TextEncoder().encode(JSON.stringify(obj)));
    publish({ latch: true });
    await waitFor("an e-stop status", () =>
      reader.statuses.some((s) => s.level === 2 && s.id === "estop" && /emergency stop latched/.test(s.message)),
    );
    publish({ latch: false });
    await waitFor("the e-stop status removed", () => reader.removed.includes("estop"));

    // The connection graph: a TCP client reading the laser, the TCP writer, this web reader.
    const laser = await readLaser(player.gp);
    tcp.push(laser);
    const laserId = `tcp 127.0.0.1:${laser.localPort}`;
    reader.client.subscribeConnectionGraph();
    await waitFor("the TCP laser reader in the graph", () =>
      (graphOf(reader.graph).subscribed.get("/laser") ?? []).includes(laserId),
    );
    const g = graphOf(reader.graph);
    assert.deepEqual(g.published.get("/laser"), ["driver sim"]);
    assert.ok(g.published.get("/cmd_vel").includes(`tcp 127.0.0.1:${drive.localPort}`), JSON.stringify([...g.published]));
    assert.ok(g.subscribed.get("/cmd_vel").includes("driver sim"));
    assert.ok(g.subscribed.get("/position").some((id) => id.startsWith("web 127.0.0.1:")), "the web reader");
    assert.ok(g.services.get("/estop").length === 1, "services provided by the server");
    // It leaves: the next update says so.
    laser.close();
    await waitFor("the TCP laser reader gone from the graph", () =>
      !(graphOf(reader.graph).subscribed.get("/laser") ?? []).includes(laserId),
    );

    const errors = reader.statuses.filter(
      (s) => s.level >= 2 && !/emergency stop|may not command/.test(s.message),
    );
    assert.deepEqual(errors, [], "no other error status");
    reader.client.close();
    writer.client.close();
  } finally {
    for (const c of tcp) c.close();
    const r = await player.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    assert.equal(r.code, 0, `player exit ${JSON.stringify(r)}\n${player.log()}`);
  }
});

// Playback control of a replay as Foxglove's timeline sends it (the @foxglove/ws-protocol
// client library of this version has no playback messages: the binary request goes on its
// socket, and the binary playback state is read from it).
function playbackRequest(command, speed, seekNs, id) {
  const idBytes = new TextEncoder().encode(id);
  const b = Buffer.alloc(19 + idBytes.length);
  b.writeUInt8(3, 0); // opcode: playback control request
  b.writeUInt8(command, 1); // 0 play, 1 pause
  b.writeFloatLE(speed, 2);
  b.writeUInt8(seekNs === undefined ? 0 : 1, 6);
  b.writeBigUInt64LE(seekNs ?? 0n, 7);
  b.writeUInt32LE(idBytes.length, 15);
  Buffer.from(idBytes).copy(b, 19);
  return b;
}

function parsePlaybackState(b) {
  const len = b.readUInt32LE(15);
  return {
    status: b.readUInt8(1), // 0 playing, 1 paused, 3 ended
    currentTime: b.readBigUInt64LE(2),
    speed: b.readFloatLE(10),
    didSeek: b.readUInt8(14) === 1,
    requestId: b.subarray(19, 19 + len).toString("utf8"),
  };
}

test("a replay is paused and sought over the WebSocket: no data while paused, the recorded time after a seek", async () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "player-playback-")), "run.mcap");
  // Record a few seconds of the simulated robot (until 25 positions came to a client).
  const recorder = await startPlayer(["-record", file]);
  try {
    const client = foxgloveClient(recorder.ws);
    const channels = await within(20_000, "advertise", (done) => client.on("advertise", done));
    const pos = channels.find((c) => c.topic === "/position");
    const sub = client.subscribe(pos.id);
    let n = 0;
    await within(20_000, "25 positions recorded", (done) =>
      client.on("message", ({ subscriptionId }) => {
        if (subscriptionId === sub && ++n === 25) done();
      }),
    );
    client.close();
  } finally {
    const r = await recorder.stop();
    assert.equal(r.code, 0, `recorder exit ${JSON.stringify(r)}\n${recorder.log()}`);
  }

  const player = await startPlayer(["-replay", file]);
  try {
    const ws = new WebSocket(player.ws, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]);
    const client = new FoxgloveClient({ ws });
    // The library does not know the playback state's opcode (5) and reports it as an
    // error; anything else is a real one.
    const errors = [];
    client.on("error", (e) => {
      if (!/opcode in binary message: 5/.test(String(e?.message ?? e))) errors.push(e);
    });
    const states = [];
    ws.on("message", (data, isBinary) => {
      // The library set binaryType "arraybuffer".
      const b = Buffer.from(data instanceof ArrayBuffer ? new Uint8Array(data) : data);
      if (isBinary && b[0] === 5) states.push(parsePlaybackState(b));
    });
    const gotInfo = within(20_000, "serverInfo", (done) => client.on("serverInfo", done));
    const gotChannels = within(20_000, "advertise", (done) => client.on("advertise", done));
    const info = await gotInfo;
    assert.ok(info.capabilities.includes("playbackControl"), `capabilities ${info.capabilities}`);
    assert.ok(info.capabilities.includes("time"));
    const ns = (t) => BigInt(t.sec) * 1_000_000_000n + BigInt(t.nsec);
    const [start, end] = [ns(info.dataStartTime), ns(info.dataEndTime)];
    assert.ok(end - start > 2_000_000_000n, `a recording of over 2 s: ${start}..${end}`);
    const times = [];
    client.on("time", ({ timestamp }) => times.push(timestamp));
    const pos = (await gotChannels).find((c) => c.topic === "/position");
    const sub = client.subscribe(pos.id);
    const positions = [];
    client.on("message", ({ subscriptionId, timestamp }) => {
      if (subscriptionId === sub) positions.push(timestamp);
    });
    const waitFor = async (what, fn) => {
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && !fn()) await new Promise((r) => setTimeout(r, 50));
      assert.ok(fn(), what);
    };
    await waitFor("positions playing", () => positions.length >= 5);
    // Message timestamps and the clock are the recording's.
    for (const t of positions) assert.ok(t >= start && t <= end, `position at ${t} in ${start}..${end}`);
    await waitFor("a time message", () => times.length > 0);
    assert.ok(times.every((t) => t >= start && t <= end), `time messages ${times}`);

    const answer = (id) => waitFor(`playback state '${id}'`, () => states.some((s) => s.requestId === id)).then(
      () => states.find((s) => s.requestId === id),
    );
    ws.send(playbackRequest(1, 1.0, undefined, "pause"));
    const paused = await answer("pause");
    assert.equal(paused.status, 1, "paused");
    // A sleep that proves nothing: 0.3 s for what was in flight, then no position for 1 s.
    await new Promise((r) => setTimeout(r, 300));
    const count = positions.length;
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(positions.length, count, "no data while paused");

    const seek = start + 500_000_000n;
    ws.send(playbackRequest(1, 1.0, seek, "seek"));
    const sought = await answer("seek");
    assert.deepEqual(
      { status: sought.status, currentTime: sought.currentTime, didSeek: sought.didSeek },
      { status: 1, currentTime: seek, didSeek: true },
    );
    await waitFor("the position at the sought time", () => positions.slice(count).includes(seek));

    ws.send(playbackRequest(0, 1.0, undefined, "play"));
    assert.equal((await answer("play")).status, 0, "playing again");
    await waitFor("positions after the sought time", () => positions.some((t) => t > seek && t < seek + 2_000_000_000n));
    assert.deepEqual(errors, [], "no client errors");
    client.close();
  } finally {
    const r = await player.stop();
    assert.equal(r.code, 0, `player exit ${JSON.stringify(r)}\n${player.log()}`);
  }
});
