// The built-in viewer page on a world's one web port (Debian's chromium, driven by
// playwright-core): it offers the world's robots in its picker, shows and drives the
// robot picked and no other, and draws every robot with "all robots".
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import { launchChromium, openPage, startPlayer, until } from "./harness.mjs";

test("on a world's one port the page picks a robot, drives only it and draws them all", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "player-world-"));
  const world = path.join(dir, "world.toml");
  // 100 robots: more than get a web port each, so all are served on the first one's.
  fs.writeFileSync(
    world,
    '[world]\nwidth = 30000\nheight = 30000\n[[swarm]]\ncount = 100\nspacing = 1500\nkind = "simple"\n',
  );
  const player = await startPlayer(["-stage", world], { gp: 0 });
  const chrome = await launchChromium({ viewport: { width: 1280, height: 1000 } });
  const browser = chrome.context;
  try {
    const { page, errors } = await openPage(browser, player.url);
    // The picker lists the world's robots; the first is shown.
    await until("the world's robots in the picker", 30_000, () =>
      page.evaluate(() => viewer.world && viewer.names.length === 100 && viewer.pose !== null),
    );
    assert.equal(await page.evaluate(() => viewer.picked), "robot0");
    assert.equal(await page.locator("#robot option").count(), 100);
    // Robot 42 picked: its topics only, and the arrow key drives it.
    await page.selectOption("#robot", "robot42");
    await until("robot 42 shown", 30_000, () =>
      page.evaluate(() => viewer.picked === "robot42" && viewer.connected && viewer.pose !== null),
    );
    const topics = await page.evaluate(() => [...viewer.channels.values()].map((c) => c.topic));
    assert.ok(topics.includes("/robot42/pose") && topics.includes("/robots"), topics.join(" "));
    assert.ok(topics.every((t) => t === "/walls" || t === "/robots" || t.startsWith("/robot42/")));
    assert.ok(new URL(page.url()).searchParams.get("robot") === "robot42");
    // Every robot on the map, from /robots.
    await page.check("#all");
    await until("every robot's pose", 30_000, () =>
      page.evaluate(() => viewer.all?.length === 100 && viewer.all.every((r) => typeof r.x === "number")),
    );
    await page.keyboard.down("ArrowUp");
    await until("robot 42 moving and the others not", 30_000, () =>
      page.evaluate(() => {
        const moving = viewer.all.filter((r) => Math.abs(r.speed) > 0).map((r) => r.name);
        return viewer.position?.speed_mm_s > 0 && moving.length === 1 && moving[0] === "robot42";
      }),
    );
    await page.keyboard.up("ArrowUp");
    await until("robot 42 stopped after release", 10_000, () =>
      page.evaluate(() => viewer.position.speed_mm_s === 0),
    );
    // The other robots drawn: grey pixels besides the picked robot's blue.
    const grey = await page.evaluate(() => {
      const c = document.getElementById("map");
      const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] > 150 && d[i] < 200 && d[i + 1] > 170 && d[i + 1] < 215 && d[i + 2] > 180 && d[i + 2] < 225) n++;
      return n;
    });
    assert.ok(grey > 50, `pixels of the other robots: ${grey}`);
    assert.deepEqual(errors, [], "no script errors");
  } finally {
    await chrome.close();
    fs.rmSync(dir, { recursive: true, force: true });
    const r = await player.stop();
    assert.equal(r.code, 0, `player exit ${JSON.stringify(r)}\n${player.log()}`);
  }
});
