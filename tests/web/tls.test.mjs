// The web endpoint over TLS in real clients: a self-signed certificate made at test time
// (the openssl command), `player` started with it in [web]; the official Foxglove client
// library over wss:// trusting that certificate, and the built-in page in chromium over
// https:// (trusting that certificate's key only), which connects back over wss://.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import foxglove from "@foxglove/ws-protocol";
import WebSocket from "ws";
import { foxgloveClient, freePorts, launchChromium, sleep, spawnPlayer, within } from "./harness.mjs";

const { FoxgloveClient } = foxglove;


/** A self-signed certificate for localhost and 127.0.0.1: its files and PEM text. */
function makeCert(dir) {
  const cert = path.join(dir, "robot.crt");
  const key = path.join(dir, "robot.key");
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-noenc",
    "-days", "2", "-keyout", key, "-out", cert, "-subj", "/CN=localhost",
    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
  ], { stdio: "ignore" });
  return { cert, key, pem: fs.readFileSync(cert) };
}

/** GET over https trusting `ca`: [status, body]. */
function httpsGet(url, ca) {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca }, (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve([res.statusCode, body]));
      })
      .on("error", reject);
  });
}

/** Starts player with TLS from `certs`; resolves once its page answers over https. */
async function startTlsPlayer(dir, certs) {
  const [gp, web] = await freePorts(2);
  const config = path.join(dir, "robot.toml");
  fs.writeFileSync(
    config,
    `[web]\ntls_cert = "robot.crt"\ntls_key = "robot.key"\n` +
      `[[robot]]\nname = "pioneer"\n[[robot.driver]]\ndriver = "sim"\ndevices = ["p", "s", "l"]\n`,
  );
  const args = ["--config", config, "-gp", String(gp), "-web", String(web), "-bind", "127.0.0.1"];
  const player = await spawnPlayer(args, {
    ready: async () => (await httpsGet(`https://localhost:${web}/`, certs.pem))[0] === 200,
    what: "https page",
  });
  return { web, ...player };
}

test("over TLS the Foxglove client library and the page in chromium connect with wss:// to a trusted self-signed certificate", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "player-tls-"));
  const certs = makeCert(dir);
  const player = await startTlsPlayer(dir, certs);
  try {
    // A plain ws:// client is refused on the TLS port.
    const plain = new WebSocket(`ws://127.0.0.1:${player.web}`, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]);
    const refusal = await within(20_000, "ws:// refused", (done) => {
      plain.on("unexpected-response", (_req, res) => done(res.statusCode));
      plain.on("error", (e) => done(String(e)));
    });
    assert.equal(refusal, 400);

    // The Foxglove client library over wss://, trusting the certificate (ws passes `ca`
    // to node's TLS); JSON, as the scan is read below (the default is protobuf).
    const client = foxgloveClient(`wss://localhost:${player.web}/?encoding=json`, { ca: certs.pem });
    const gotInfo = within(20_000, "serverInfo", (done) => client.on("serverInfo", done));
    const gotChannels = within(20_000, "advertise", (done) => client.on("advertise", done));
    const info = await gotInfo;
    assert.ok(info.capabilities.includes("clientPublish"));
    const laser = (await gotChannels).find((c) => c.topic === "/laser");
    assert.ok(laser, "/laser advertised");
    const sub = client.subscribe(laser.id);
    const scan = await within(20_000, "a laser scan", (done) =>
      client.on("message", ({ subscriptionId, data }) => {
        if (subscriptionId === sub) done(JSON.parse(new TextDecoder().decode(data)));
      }),
    );
    assert.equal(scan.ranges.length, 361);
    client.close();

    // The page over https in chromium, trusting this certificate's key only.
    const spki = crypto
      .createHash("sha256")
      .update(new crypto.X509Certificate(certs.pem).publicKey.export({ type: "spki", format: "der" }))
      .digest("base64");
    const chrome = await launchChromium({ args: [`--ignore-certificate-errors-spki-list=${spki}`] });
    const browser = chrome.context;
    try {
      const page = browser.pages()[0] ?? (await browser.newPage());
      const sockets = [];
      page.on("websocket", (w) => sockets.push(w.url()));
      await page.goto(`https://localhost:${player.web}/`);
      const deadline = Date.now() + 30_000;
      while (!(await page.evaluate(() => viewer.connected && viewer.laser !== null))) {
        if (Date.now() > deadline) throw new Error(`the page did not connect:\n${player.log()}`);
        await sleep(100);
      }
      assert.ok(sockets.length > 0 && sockets.every((u) => u.startsWith("wss://")), `sockets ${sockets}`);
    } finally {
      await chrome.close();
    }
    assert.match(player.log(), /plain connection on the TLS web port refused/);
  } finally {
    const r = await player.stop();
    assert.equal(r.code, 0, player.log());
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
