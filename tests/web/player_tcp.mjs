// A minimal Player 0.7.4a TCP client (the protocol the robot's own clients speak): opens the
// position device for reading and keeps every position reading with the time it arrived.
import net from "node:net";

/** One decoded position reading (the 21-byte `p` data field, big-endian). */
function decodePosition(b) {
  return {
    time_ms: b.readUInt32BE(0),
    x_mm: b.readInt32BE(4),
    y_mm: b.readInt32BE(8),
    heading_deg: b.readUInt16BE(12),
    speed_mm_s: b.readInt16BE(14),
    turn_rate_deg_s: b.readInt16BE(16),
    compass_deg: b.readUInt16BE(18),
    stall: b[20] !== 0,
  };
}

/**
 * A `data` listener that splits the server's byte stream into packets (a kind byte, a
 * 16-bit big-endian size, the body) and calls `onPacket(kind, body)` for each whole one.
 */
function packets(onPacket) {
  let buf = Buffer.alloc(0);
  return (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 3) {
      const size = buf.readUInt16BE(1);
      if (buf.length < 3 + size) break;
      const kind = buf[0];
      const body = buf.subarray(3, 3 + size);
      buf = buf.subarray(3 + size);
      onPacket(kind, body);
    }
  };
}

/**
 * Connects to `port` on loopback, asks for `p r` (position, read) and collects readings in
 * `samples` ({ at: ms since the epoch, ...reading }). Resolves once the first reading arrived.
 */
export function watchPosition(port) {
  const samples = [];
  const sock = net.connect(port, "127.0.0.1");
  const watcher = {
    samples,
    /** The newest reading. */
    latest: () => samples[samples.length - 1],
    close: () => sock.destroy(),
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no position reading within 20 s")), 20_000);
    sock.once("error", reject);
    sock.on("connect", () => sock.write(Buffer.from([0x64, 0x72, 0, 2, 0x70, 0x72])));
    sock.on(
      "data",
      packets((kind, body) => {
        if (kind === 0x72) {
          // The reply: `p r` when read access was granted.
          const granted = body.length >= 2 && body[0] === 0x70 && body[1] === 0x72;
          if (!granted) reject(new Error(`position access refused: ${[...body]}`));
        } else if (kind === 0x70 && body.length === 21) {
          samples.push({ at: Date.now(), ...decodePosition(body) });
          if (samples.length === 1) {
            clearTimeout(timer);
            resolve(watcher);
          }
        }
      }),
    );
  });
}

/**
 * Connects to `port` on loopback, presents `key` (`x y k`) when given, asks for `p a`
 * (position, read and write) and, once granted, sends one position command of `speed` mm/s
 * and then nothing more, as a client of 2000 that expects one command to hold. Resolves with
 * { sentAt (ms since the epoch), localPort, samples, latest(), close() } once the command is sent; the
 * position readings keep coming in `samples`.
 */
export function commandOnce(port, key, speed) {
  const samples = [];
  const sock = net.connect(port, "127.0.0.1");
  const header = (a, b, len) => Buffer.from([a, b, len >> 8, len & 0xff]);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no write access to position within 20 s")), 20_000);
    sock.once("error", reject);
    sock.on("connect", () => {
      if (key) {
        const k = Buffer.from(`k${key}`);
        sock.write(Buffer.concat([header(0x78, 0x79, k.length), k]));
      }
      sock.write(Buffer.from([0x64, 0x72, 0, 2, 0x70, 0x61]));
    });
    sock.on(
      "data",
      packets((kind, body) => {
        if (kind === 0x72) {
          const granted = body.length >= 2 && body[0] === 0x70 && body[1] === 0x61;
          if (!granted) {
            reject(new Error(`position write access refused: ${[...body]}`));
            return;
          }
          const cmd = Buffer.alloc(4);
          cmd.writeInt16BE(speed, 0);
          cmd.writeInt16BE(0, 2);
          sock.write(Buffer.concat([header(0x63, 0x70, 4), cmd]));
          clearTimeout(timer);
          resolve({
            sentAt: Date.now(),
            localPort: sock.localPort,
            samples,
            latest: () => samples[samples.length - 1],
            close: () => sock.destroy(),
          });
        } else if (kind === 0x70 && body.length === 21) {
          samples.push({ at: Date.now(), ...decodePosition(body) });
        }
      }),
    );
  });
}

/** Connects to `port` on loopback and asks for `l r` (the laser, read); resolves with the socket's local port and a close(). */
export function readLaser(port) {
  const sock = net.connect(port, "127.0.0.1");
  return new Promise((resolve, reject) => {
    sock.once("error", reject);
    sock.on("connect", () => {
      sock.write(Buffer.from([0x64, 0x72, 0, 2, 0x6c, 0x72]));
      resolve({ localPort: sock.localPort, close: () => sock.destroy() });
    });
    sock.on("data", () => {});
  });
}
