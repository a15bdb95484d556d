// The binary encodings, read by libraries we did not write: the official Foxglove client
// subscribes with the default URL (protobuf), and protobufjs decodes each `foxglove.*`
// channel from the FileDescriptorSet the server advertised, as Foxglove does. Our own
// `player.*` channels stay JSON; `?encoding=json` gets today's JSON everywhere, with the
// same channel ids.
import { test } from "node:test";
import assert from "node:assert/strict";
import protobuf from "protobufjs";
import descriptor from "protobufjs/ext/descriptor/index.js";
import { foxgloveClient, startPlayer, within } from "./harness.mjs";

const decoder = new TextDecoder();

/** A decoder of channel `c` from its advertised schema: protobufjs for protobuf. */
function channelDecoder(c) {
  if (c.encoding === "json") return (data) => JSON.parse(decoder.decode(data));
  assert.equal(c.encoding, "protobuf", `${c.topic} encoding`);
  assert.equal(c.schemaEncoding, "protobuf", `${c.topic} schema encoding`);
  const set = descriptor.FileDescriptorSet.decode(Buffer.from(c.schema, "base64"));
  const root = protobuf.Root.fromDescriptor(set);
  const type = root.lookupType(c.schemaName);
  // The client library hands a DataView over the frame; protobufjs reads a Uint8Array.
  return (data) =>
    type.toObject(type.decode(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)), {
      longs: Number,
      defaults: true,
    });
}

async function connect(url) {
  const client = foxgloveClient(url);
  const channels = await within(20_000, "advertise", (done) => client.on("advertise", done));
  return { client, channels };
}

/** Subscribes to `topics` and resolves with the first decoded message of each. */
function firstOfEach(client, channels, topics) {
  const bySub = new Map();
  for (const t of topics) {
    const c = channels.find((x) => x.topic === t);
    assert.ok(c, `${t} advertised`);
    bySub.set(client.subscribe(c.id), { c, decode: channelDecoder(c) });
  }
  const got = new Map();
  return within(30_000, `a message on ${topics}`, (done) => {
    client.on("message", ({ subscriptionId, data }) => {
      const s = bySub.get(subscriptionId);
      if (!s || got.has(s.c.topic)) return;
      got.set(s.c.topic, s.decode(data));
      if (got.size === topics.length) done(got);
    });
  });
}

const TOPICS = ["/laser", "/tf", "/pose", "/sonar", "/walls", "/tf_map", "/vision", "/position", "/misc"];

test("the foxglove channels are protobuf by default, decoded by protobufjs from the advertised descriptors", async () => {
  const player = await startPlayer();
  try {
    const { client, channels } = await connect(player.ws);
    for (const c of channels) {
      const ours = c.schemaName.startsWith("player.");
      assert.equal(c.encoding, ours ? "json" : "protobuf", `${c.topic} (${c.schemaName})`);
    }
    const m = await firstOfEach(client, channels, TOPICS);
    const laser = m.get("/laser");
    assert.equal(laser.ranges.length, 361);
    assert.ok(laser.ranges.some((r) => r > 0), "the laser sees walls");
    assert.equal(laser.frame_id, "base_link");
    assert.ok(Math.abs(laser.start_angle + Math.PI / 2) < 1e-12);
    assert.ok(laser.timestamp.seconds > 1_600_000_000, `timestamp ${JSON.stringify(laser.timestamp)}`);
    const tf = m.get("/tf");
    assert.equal(tf.parent_frame_id, "odom");
    assert.equal(tf.child_frame_id, "base_link");
    assert.equal(typeof tf.rotation.w, "number");
    assert.equal(m.get("/pose").frame_id, "odom");
    const sonar = m.get("/sonar").entities[0];
    assert.equal(sonar.frame_id, "base_link");
    assert.equal(sonar.triangles[0].points.length, 48);
    assert.equal(sonar.metadata[0].key, "ranges_mm");
    const walls = m.get("/walls").entities[0].lines[0];
    assert.ok(walls.points.length >= 8, "walls");
    assert.equal(walls.type, 2, "LINE_LIST");
    assert.equal(m.get("/tf_map").child_frame_id, "odom");
    assert.ok(Array.isArray(m.get("/vision").circles));
    // Ours: JSON.
    assert.equal(typeof m.get("/position").x_mm, "number");
    assert.equal(m.get("/misc").front_bumpers.length, 5);
    client.close();

    // ?encoding=json: the same channel ids, every one JSON with a JSON schema.
    const j = await connect(`${player.ws}/?encoding=json`);
    for (const c of j.channels) {
      assert.equal(c.encoding, "json", c.topic);
      assert.equal(c.schemaEncoding, "jsonschema", c.topic);
      assert.equal(channels.find((x) => x.topic === c.topic)?.id, c.id, `${c.topic} id`);
    }
    const jm = await firstOfEach(j.client, j.channels, ["/laser", "/sonar"]);
    assert.equal(jm.get("/laser").ranges.length, 361);
    assert.equal(jm.get("/sonar").entities[0].triangles[0].points.length, 48);
    j.client.close();
  } finally {
    const r = await player.stop();
    assert.equal(r.code, 0, `player exit ${JSON.stringify(r)}\n${player.log()}`);
  }
});
