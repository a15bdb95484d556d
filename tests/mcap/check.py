#!/usr/bin/env python3
"""Checks an MCAP file written by `player -record` with the `mcap` package from PyPI.

A reader no one in this project wrote: if it reads our files, Foxglove's tools will too.

    check.py FILE [--truncated] [--robot NAME] [--rate HZ] [--min-seconds S]
                  [--commands N] [--configs N] [--no-foxglove] [--map]

Checks, for each of the seven 0.7.4a devices of robot NAME: a raw channel
/NAME/<code> (message encoding player-0.7.4a, a schema naming the device's layout),
every payload of the size Table 7 gives, sequence numbers increasing, log times not
decreasing, and a message count near HZ x the recorded time span, which must be at
least S seconds. With Foxglove channels on (the default), /NAME/laser and /NAME/tf
must hold one message per reading, as must /NAME/pose and /NAME/sonar (the web
viewer's Foxglove channels, JSON or protobuf, decoded by the schema they carry). A complete file is read through its summary
(counts must match the statistics record); a --truncated one (its writer was killed)
is read front to back until it ends. With --map, the robot's map device M must be
recorded whole: /NAME/M/map holds the map once, its 28-byte description the newest
/NAME/M reading's and exactly width x height cells of -1, 0 or +1 after it, and
/NAME/map the same cells as one foxglove.Grid: as many columns and cells, each raw
value shown as one grid value everywhere, distinct raw values as distinct grid
values. Prints one line per channel and exits non-zero, naming the problem, on the
first failed check.
"""

import argparse
import json
import sys
from collections import defaultdict

from mcap.reader import make_reader
from mcap.records import Channel, Header, Message, Schema
from mcap.stream_reader import StreamReader

# Table 7: the data size of each device; vision is 64 + 10 per blob.
SIZES = {"l": 722, "s": 32, "p": 21, "m": 3, "g": 2, "z": 6}
NAMES = {"l": "laser", "s": "sonar", "p": "position", "m": "misc", "g": "gripper",
         "z": "ptz", "v": "vision"}


def decoder(schema):
    """A function from message bytes to a dict, for a JSON schema or a protobuf one (its
    FileDescriptorSet, decoded by Google's protobuf package)."""
    if schema.encoding == "jsonschema":
        json.loads(schema.data)
        return json.loads
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from google.protobuf.json_format import MessageToDict
    files = descriptor_pb2.FileDescriptorSet.FromString(schema.data)
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(schema.name))
    return lambda data: MessageToDict(cls.FromString(data), preserving_proto_field_name=True)


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


def read_complete(path):
    """Schemas, channels and messages through the summary and the indexed reader."""
    with open(path, "rb") as f:
        reader = make_reader(f)
        header = reader.get_header()
        summary = reader.get_summary()
        if summary is None:
            fail("a complete file has no summary section")
        messages = [(ch.id, m) for _, ch, m in reader.iter_messages(log_time_order=False)]
    counts = summary.statistics.channel_message_counts if summary.statistics else {}
    return header, dict(summary.schemas), dict(summary.channels), messages, counts


def read_truncated(path):
    """Records front to back until the file ends (it has no footer)."""
    header, schemas, channels, messages = None, {}, {}, []
    ended = "complete"
    try:
        with open(path, "rb") as f:
            for rec in StreamReader(f, skip_magic=False).records:
                if isinstance(rec, Header):
                    header = rec
                elif isinstance(rec, Schema):
                    schemas[rec.id] = rec
                elif isinstance(rec, Channel):
                    channels[rec.id] = rec
                elif isinstance(rec, Message):
                    messages.append((rec.channel_id, rec))
    except Exception as e:  # the mcap package raises EndOfFile (or a record error) here
        ended = f"{type(e).__name__} {e}".strip()
    print(f"read front to back: {len(messages)} messages, ended: {ended}")
    return header, schemas, channels, messages, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--truncated", action="store_true")
    ap.add_argument("--robot", default="pioneer")
    ap.add_argument("--rate", type=float, default=10.0)
    ap.add_argument("--min-seconds", type=float, default=1.0)
    ap.add_argument("--commands", type=int, default=0)
    ap.add_argument("--configs", type=int, default=0)
    ap.add_argument("--no-foxglove", action="store_true")
    ap.add_argument("--map", action="store_true")
    a = ap.parse_args()

    read = read_truncated if a.truncated else read_complete
    header, schemas, channels, messages, counts = read(a.file)
    if header is None or not header.library.startswith("player"):
        fail(f"header library is {header and header.library!r}, expected 'player ...'")
    by_topic = {ch.topic: ch for ch in channels.values()}
    per_channel = defaultdict(list)
    for cid, m in messages:
        per_channel[cid].append(m)
    if counts is not None:
        for cid, ms in per_channel.items():
            if counts.get(cid) != len(ms):
                fail(f"channel {channels[cid].topic}: statistics say {counts.get(cid)}, read {len(ms)}")

    readings = {}
    for code, name in NAMES.items():
        topic = f"/{a.robot}/{code}"
        ch = by_topic.get(topic)
        if ch is None:
            fail(f"no channel {topic}; channels: {sorted(by_topic)}")
        if ch.message_encoding != "player-0.7.4a":
            fail(f"{topic}: message encoding {ch.message_encoding!r}")
        schema = schemas.get(ch.schema_id)
        if schema is None or schema.name != f"player.{name}.data" or name not in schema.data.decode():
            fail(f"{topic}: schema {schema and schema.name!r} does not name the {name} layout")
        ms = per_channel.get(ch.id, [])
        if len(ms) < 2:
            fail(f"{topic}: {len(ms)} messages")
        for m in ms:
            n = len(m.data)
            want = SIZES.get(code)
            if (want is not None and n != want) or (want is None and (n < 64 or (n - 64) % 10)):
                fail(f"{topic}: payload of {n} bytes, Table 7 says {want or '64 + 10 per blob'}")
        for x, y in zip(ms, ms[1:]):
            if y.sequence <= x.sequence or y.log_time < x.log_time:
                fail(f"{topic}: sequence or time goes back ({x.sequence}@{x.log_time} then {y.sequence}@{y.log_time})")
        span = (ms[-1].log_time - ms[0].log_time) / 1e9
        expected = a.rate * span
        got = len(ms) - 1
        print(f"{topic}: {len(ms)} messages over {span:.2f} s ({got / span:.2f} Hz), "
              f"{len(ms[0].data)} bytes first")
        if span < a.min_seconds:
            fail(f"{topic}: recording spans {span:.2f} s, expected at least {a.min_seconds}")
        if not (0.8 * expected <= got <= 1.2 * expected + 1):
            fail(f"{topic}: {got} intervals in {span:.2f} s, expected about {expected:.0f} at {a.rate} Hz")
        readings[code] = ms

    if not a.no_foxglove:
        for code, name, schema_name in [("l", "laser", "foxglove.LaserScan"),
                                        ("p", "tf", "foxglove.FrameTransform"),
                                        ("p", "pose", "foxglove.PoseInFrame"),
                                        ("s", "sonar", "foxglove.SceneUpdate")]:
            topic = f"/{a.robot}/{name}"
            ch = by_topic.get(topic)
            if ch is None or ch.message_encoding not in ("json", "protobuf"):
                fail(f"no JSON or protobuf channel {topic}")
            schema = schemas.get(ch.schema_id)
            want = {"json": "jsonschema", "protobuf": "protobuf"}[ch.message_encoding]
            if schema is None or schema.name != schema_name or schema.encoding != want:
                fail(f"{topic}: schema {schema and schema.name!r}")
            decode = decoder(schema)
            ms = per_channel.get(ch.id, [])
            raw = readings[code]
            if abs(len(ms) - len(raw)) > 1:
                fail(f"{topic}: {len(ms)} messages for {len(raw)} readings")
            for m in ms:
                j = decode(m.data)
                if code == "l" and len(j["ranges"]) != 361:
                    fail(f"{topic}: {len(j['ranges'])} ranges")
                if name == "tf" and not {"translation", "rotation"} <= j.keys():
                    fail(f"{topic}: {sorted(j)}")
            print(f"{topic}: {len(ms)} {schema_name} {ch.message_encoding} messages")

    for suffix, want, size in [("cmd", a.commands, 4), ("cfg", a.configs, None)]:
        if want == 0:
            continue
        topic = f"/{a.robot}/p/{suffix}"
        ch = by_topic.get(topic)
        if ch is None:
            fail(f"no channel {topic}")
        ms = per_channel.get(ch.id, [])
        if len(ms) < want:
            fail(f"{topic}: {len(ms)} messages, expected at least {want}")
        if size is not None and any(len(m.data) != size for m in ms):
            fail(f"{topic}: a payload is not {size} bytes")
        print(f"{topic}: {len(ms)} messages")

    if a.map:
        check_map(a, by_topic, schemas, per_channel)

    print("OK")


def check_map(a, by_topic, schemas, per_channel):
    """The map recorded whole, raw and as a foxglove.Grid (see --map above)."""
    import struct
    m_ch, whole_ch = by_topic.get(f"/{a.robot}/M"), by_topic.get(f"/{a.robot}/M/map")
    if m_ch is None or whole_ch is None:
        fail(f"no channels /{a.robot}/M and /{a.robot}/M/map")
    readings = per_channel.get(m_ch.id, [])
    wholes = per_channel.get(whole_ch.id, [])
    if not readings or len(wholes) != 1:
        fail(f"/{a.robot}/M/map: {len(wholes)} maps for {len(readings)} M readings")
    data = wholes[0].data
    desc = data[:28]
    if desc != readings[-1].data:
        fail(f"/{a.robot}/M/map: its description is not the newest M reading")
    map_id, width, height = struct.unpack(">III", desc[:12])
    cells = data[28:]
    if len(cells) != width * height or any(c not in (0, 1, 255) for c in cells):
        fail(f"/{a.robot}/M/map: {len(cells)} cells for {width} x {height}, or a cell not -1, 0 or +1")
    free, occupied = cells.count(255), cells.count(1)
    print(f"/{a.robot}/M/map: map {map_id:08x}, {width} x {height}, {free} free, {occupied} occupied")
    if a.no_foxglove:
        return
    grid_ch = by_topic.get(f"/{a.robot}/map")
    if grid_ch is None:
        fail(f"no channel /{a.robot}/map")
    schema = schemas.get(grid_ch.schema_id)
    if schema is None or schema.name != "foxglove.Grid":
        fail(f"/{a.robot}/map: schema {schema and schema.name!r}")
    grids = per_channel.get(grid_ch.id, [])
    if len(grids) != 1:
        fail(f"/{a.robot}/map: {len(grids)} grids")
    g = decoder(schema)(grids[0].data)
    import base64
    raw = base64.b64decode(g["data"]) if isinstance(g["data"], str) else bytes(g["data"])
    stride = int(g.get("cell_stride", 1))
    if int(g["column_count"]) != width or len(raw) != width * height * stride:
        fail(f"/{a.robot}/map: {g['column_count']} columns, {len(raw)} bytes for {width} x {height}")
    # The same cells: free and occupied where the raw map has them, in the same places.
    first = [raw[i * stride] for i in range(width * height)]
    kinds = {}
    for r, v in zip(cells, first):
        kinds.setdefault(r, set()).add(v)
    if any(len(v) != 1 for v in kinds.values()) or len({min(v) for v in kinds.values()}) != len(kinds):
        fail(f"/{a.robot}/map: the grid's values do not follow the raw cells: {kinds}")
    print(f"/{a.robot}/map: foxglove.Grid {width} x {height}, cell values {sorted((k, min(v)) for k, v in kinds.items())}")


if __name__ == "__main__":
    main()
