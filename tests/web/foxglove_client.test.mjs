// The official Foxglove WebSocket client library against the real server: every advertised
// channel is subscribed and messages of each are decoded; a Twist published on /cmd_vel
// moves the robot.
import { test } from "node:test";
import assert from "node:assert/strict";
import foxglove from "@foxglove/ws-protocol";
import WebSocket from "ws";

const { FoxgloveClient } = foxglove;
import { startPlayer } from "./harness.mjs";

const decoder = new TextDecoder();

function within(ms, what, fn) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    fn((v) => {
      clearTimeout(t);
      resolve(v);
    });
  });
}

test("the Foxglove client library subscribes to every channel, decodes each, calls the services and reads the parameters", async () => {
  const player = await startPlayer();
  try {
    // JSON throughout (the default is protobuf for the foxglove.* channels: protobuf.test.mjs).
    const ws = new WebSocket(`${player.ws}/?encoding=json`, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]);
    const client = new FoxgloveClient({ ws });
    // Both listeners first: the server sends serverInfo and advertise back to back.
    const gotInfo = within(20_000, "serverInfo", (done) => client.on("serverInfo", done));
    const gotChannels = within(20_000, "advertise", (done) => client.on("advertise", done));
    const gotServices = within(20_000, "advertiseServices", (done) => client.on("advertiseServices", done));
    const info = await gotInfo;
    assert.ok(info.capabilities.includes("clientPublish"));
    assert.deepEqual(info.supportedEncodings, ["json"]);
    const channels = await gotChannels;
    const topics = channels.map((c) => c.topic).sort();
    for (const t of ["/laser", "/pose", "/tf", "/sonar", "/misc", "/map", "/position"]) {
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
    assert.ok(decoded.get("/map").entities[0].lines[0].points.length >= 8, "walls");
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
    const statusCount = statuses.length;
    const answer = within(10_000, "setParameters answer", (done) => {
      client.on("parameterValues", (p) => {
        if (p.id === "set") done(p.parameters);
      });
    });
    client.setParameters([{ name: "p.command_timeout", value: 5 }], "set");
    assert.deepEqual(await answer, [{ name: "p.command_timeout", value: 0.5 }], "unchanged");
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
