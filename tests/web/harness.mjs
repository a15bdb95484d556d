// What the tests here share: the real `player` binary (the simulated robot) started on free
// loopback ports and stopped, waits with a deadline, Foxglove's client library connected,
// and Debian's chromium launched headless.
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import foxglove from "@foxglove/ws-protocol";
import { chromium } from "playwright-core";
import WebSocket from "ws";

const { FoxgloveClient } = foxglove;

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

/** Resolves after `ms` milliseconds. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Resolves with the value `fn` hands to the `done` callback it is given; rejects naming
 * `what` if that does not happen within `ms`.
 */
export function within(ms, what, fn) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    fn((v) => {
      clearTimeout(t);
      resolve(v);
    });
  });
}

/** Calls `fn` every 100 ms until it returns something truthy (returned); throws naming `what` after `ms`. */
export async function until(what, ms, fn) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms: ${what}`);
    await sleep(100);
  }
}

/** Foxglove's client library on `url` with its subprotocol (`options` go to ws, e.g. `ca` for wss://). */
export function foxgloveClient(url, options) {
  return new FoxgloveClient({ ws: new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL], options) });
}

/** Debian's chromium: $CHROMIUM, else /usr/bin/chromium. */
export const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";

/**
 * Launches chromium headless with a fresh profile (a temporary directory named from
 * `prefix`); `viewport` and extra `args` as given. `close()` closes it and removes the profile.
 */
export async function launchChromium({ prefix = "player-chromium-", viewport, args = [] } = {}) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  // playwright passes the profile as --user-data-dir.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    ...(viewport ? { viewport } : {}),
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...args,
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * The first page of a chromium `context` at `url`, with the script errors it raises
 * collected in `errors`.
 */
export async function openPage(context, url) {
  const page = context.pages()[0] ?? (await context.newPage());
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(url);
  return { page, errors };
}

/**
 * Spawns player with `args` (in `cwd`) and resolves once `ready()` resolves true (polled
 * every 100 ms, at most 60 s; `what` names it in the error), with its output so far and stop().
 */
export async function spawnPlayer(args, { cwd, ready, what }) {
  const child = spawn(playerBin, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout.on("data", (d) => (log += d));
  child.stderr.on("data", (d) => (log += d));
  const exited = new Promise((r) => child.once("exit", (code, signal) => r({ code, signal })));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`player exited early:\n${log}`);
    try {
      if (await ready()) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`player's ${what} did not answer within 60 s:\n${log}`);
    }
    await sleep(100);
  }
  return {
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

/**
 * Starts player with `extra` flags; resolves when its web endpoint answers. `gp` is its
 * `-gp`; by default a free port. A world of many robots passes 0: each robot then listens
 * on a port the system picks, where a free first port says nothing of the ports after it.
 */
export async function startPlayer(extra = [], { gp } = {}) {
  const [free, web] = await freePorts(2);
  gp ??= free;
  const args = ["-gp", String(gp), "-web", String(web), ...extra];
  const player = await spawnPlayer(args, {
    cwd: repo,
    ready: async () => (await fetch(`http://127.0.0.1:${web}/`)).ok,
    what: "web endpoint",
  });
  return {
    gp,
    web,
    url: `http://127.0.0.1:${web}/`,
    ws: `ws://127.0.0.1:${web}`,
    ...player,
  };
}
