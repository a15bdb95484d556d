// Starts the real `player` binary (the simulated robot) on free loopback ports and stops it.
import { spawn } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..");

/** The player binary: $PLAYER_BIN, else the debug build of this checkout. */
export const playerBin =
  process.env.PLAYER_BIN ??
  path.join(process.env.CARGO_TARGET_DIR ?? path.join(repo, "target"), "debug", "player");

/**
 * `n` distinct free loopback ports: all are held open until the last is found, so the
 * system cannot hand the same one out twice (closing one before asking for the next can).
 */
export async function freePorts(n) {
  const servers = [];
  try {
    for (let i = 0; i < n; i++) {
      const s = net.createServer();
      await new Promise((resolve, reject) => {
        s.once("error", reject);
        s.listen(0, "127.0.0.1", resolve);
      });
      servers.push(s);
    }
    return servers.map((s) => s.address().port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts player with `extra` flags; resolves when its web endpoint answers. */
export async function startPlayer(extra = []) {
  const [gp, web] = await freePorts(2);
  const args = ["-gp", String(gp), "-web", String(web), ...extra];
  const child = spawn(playerBin, args, { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout.on("data", (d) => (log += d));
  child.stderr.on("data", (d) => (log += d));
  const exited = new Promise((r) => child.once("exit", (code, signal) => r({ code, signal })));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`player exited early:\n${log}`);
    try {
      const r = await fetch(`http://127.0.0.1:${web}/`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`player's web endpoint did not answer within 60 s:\n${log}`);
    }
    await sleep(100);
  }
  return {
    gp,
    web,
    url: `http://127.0.0.1:${web}/`,
    ws: `ws://127.0.0.1:${web}`,
    log: () => log,
    async stop() {
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 15_000);
      const r = await exited;
      clearTimeout(t);
      return r;
    },
  };
}
