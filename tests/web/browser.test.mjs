// The built-in viewer page in a real browser (Debian's chromium, driven by playwright-core):
// it draws the laser, drives the robot while the up arrow is held, stops on release, and
// leaves a screenshot.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { launchChromium, openPage, sleep, startPlayer, until } from "./harness.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

test("the viewer page draws the laser, drives while the up arrow is held and stops on release", async () => {
  const player = await startPlayer();
  const chrome = await launchChromium({ viewport: { width: 1280, height: 1000 } });
  const browser = chrome.context;
  try {
    const { page, errors } = await openPage(browser, player.url);
    // Connected, and the robot's pose and a laser scan have arrived.
    await until("pose and laser on the page", 30_000, () =>
      page.evaluate(() => viewer.connected && viewer.pose !== null && viewer.laser !== null),
    );
    await until("walls of the simulated room", 30_000, () =>
      page.evaluate(() => (viewer.walls?.length ?? 0) > 0 && viewer.mapToOdom !== null),
    );
    // The laser drawing is not empty: count its red pixels on the canvas.
    const laserPixels = await until("laser pixels on the canvas", 10_000, () =>
      page.evaluate(() => {
        const c = document.getElementById("map");
        const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] > 200 && d[i + 1] < 60 && d[i + 2] < 60) n++;
        return n > 100 ? n : 0;
      }),
    );
    assert.ok(laserPixels > 100, `laser pixels ${laserPixels}`);

    const before = await page.evaluate(() => ({ ...viewer.pose }));
    const sentBefore = await page.evaluate(() => viewer.sent);
    const heldFrom = Date.now();
    await page.keyboard.down("ArrowUp");
    // Held: the robot drives forward (the first commands may meet the grant still pending).
    const moving = await until("the robot moving forward", 20_000, () =>
      page.evaluate(
        (b) => viewer.position.speed_mm_s > 0 && Math.hypot(viewer.pose.x - b.x, viewer.pose.y - b.y) > 0.15,
        before,
      ),
    );
    assert.ok(moving);
    await sleep(1000);
    const sent = (await page.evaluate(() => viewer.sent)) - sentBefore;
    const seconds = (Date.now() - heldFrom) / 1000;
    // 10 Hz while held: one at the press, then one per 100 ms (a loaded machine may
    // delay timers, never hurry them).
    assert.ok(sent >= 5, `commands sent while held: ${sent} in ${seconds} s`);
    assert.ok(sent <= 2 + 10 * seconds, `commands sent while held: ${sent} in ${seconds} s`);
    await page.keyboard.up("ArrowUp");
    const sentAtRelease = await page.evaluate(() => viewer.sent);
    // Released: the robot stops, and no more commands go out.
    await until("the robot stopped after release", 10_000, () =>
      page.evaluate(() => viewer.position.speed_mm_s === 0),
    );
    const stoppedAt = await page.evaluate(() => ({ ...viewer.pose }));
    await sleep(1000);
    const later = await page.evaluate(() => ({ ...viewer.pose }));
    assert.ok(Math.hypot(later.x - stoppedAt.x, later.y - stoppedAt.y) < 0.01, "stays stopped");
    assert.equal(await page.evaluate(() => viewer.sent), sentAtRelease, "no commands after release");
    // The e-stop button: while the up arrow is held the robot drives; the button stops it
    // and latches, so holding the key does nothing; the button again releases it.
    await page.keyboard.down("ArrowUp");
    await until("driving again", 20_000, () => page.evaluate(() => viewer.position.speed_mm_s > 0));
    await page.click("#estop");
    await until("e-stop latched", 10_000, () =>
      page.evaluate(() => viewer.estop === true && viewer.position.speed_mm_s === 0),
    );
    await page.keyboard.down("ArrowUp");
    await sleep(1000);
    assert.equal(await page.evaluate(() => viewer.position.speed_mm_s), 0, "latched: no motion");
    assert.equal(await page.textContent("#estop"), "RELEASE");
    await page.keyboard.up("ArrowUp");
    await page.click("#estop");
    await until("e-stop released", 10_000, () => page.evaluate(() => viewer.estop === false));
    // The trail shows where it went; the side panel shows device states and rates.
    assert.ok((await page.evaluate(() => viewer.trail.length)) > 3);
    await until("device states", 10_000, () =>
      page.evaluate(() => viewer.devices?.devices.some((d) => d.code === "l" && d.state === "up")),
    );
    await sleep(1200); // one more rate window on screen
    const out = path.join(here, "out");
    fs.mkdirSync(out, { recursive: true });
    await page.screenshot({ path: path.join(out, "viewer.png") });
    // Phone-sized: the page lays out in one column and still draws.
    await page.setViewportSize({ width: 390, height: 844 });
    await sleep(500);
    await page.screenshot({ path: path.join(out, "viewer-phone.png"), fullPage: true });
    assert.deepEqual(errors, [], "no script errors");
    console.log(`laser pixels ${laserPixels}, commands while held ${sent} in ${seconds.toFixed(1)} s`);
  } finally {
    await chrome.close();
    const r = await player.stop();
    assert.equal(r.code, 0, `player exit ${JSON.stringify(r)}\n${player.log()}`);
  }
});
