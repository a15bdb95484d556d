// Renders Foxglove Studio's App (exported by the studio-base bundle onto `window`) with the
// Foxglove WebSocket and remote-file data sources, settings kept in memory, and one layout:
// player's preset from docs/foxglove-layout.json (served as /layout.json), selected at start.
// The page's URL is Studio's deep link (`?ds=foxglove-websocket&ds.url=ws://...`).
"use strict";

(async () => {
  const studio = window;
  const h = window.React.createElement;

  /** Studio's app settings (IAppConfiguration), in memory with a few defaults. */
  class MemoryConfiguration {
    constructor(defaults) {
      this.values = new Map(Object.entries(defaults));
      this.listeners = new Map();
    }
    get(key) {
      return this.values.get(key);
    }
    async set(key, value) {
      this.values.set(key, value);
      for (const cb of this.listeners.get(key) ?? []) cb(value);
    }
    addChangeListener(key, cb) {
      if (!this.listeners.has(key)) this.listeners.set(key, new Set());
      this.listeners.get(key).add(cb);
    }
    removeChangeListener(key, cb) {
      this.listeners.get(key)?.delete(cb);
    }
  }

  /** Studio's layout storage (ILayoutStorage), in memory: namespace -> id -> layout. */
  class MemoryLayouts {
    constructor() {
      this.spaces = new Map();
    }
    space(ns) {
      if (!this.spaces.has(ns)) this.spaces.set(ns, new Map());
      return this.spaces.get(ns);
    }
    async list(ns) {
      return [...this.space(ns).values()];
    }
    async get(ns, id) {
      return this.space(ns).get(id);
    }
    async put(ns, layout) {
      this.space(ns).set(layout.id, layout);
      return layout;
    }
    async delete(ns, id) {
      this.space(ns).delete(id);
    }
    async migrateUnnamespacedLayouts() {}
    async importLayouts({ fromNamespace, toNamespace }) {
      for (const l of await this.list(fromNamespace)) await this.put(toNamespace, l);
    }
  }

  const data = await (await fetch("/layout.json")).json();
  const layouts = new MemoryLayouts();
  const id = "player-preset";
  await layouts.put("local", {
    id,
    name: "player",
    permission: "CREATOR_WRITE",
    baseline: { data, savedAt: new Date().toISOString() },
    working: undefined,
    syncInfo: undefined,
  });
  // Studio restores the layout named in the user profile (kept in localStorage).
  localStorage.setItem("studio.profile-data", JSON.stringify({ currentLayoutId: id }));

  const configuration = new MemoryConfiguration({
    [studio.AppSetting.TELEMETRY_ENABLED]: false,
    [studio.AppSetting.CRASH_REPORTING_ENABLED]: false,
    [studio.AppSetting.SHOW_OPEN_DIALOG_ON_STARTUP]: false,
    [studio.AppSetting.HIDE_SIGN_IN_PROMPT]: true,
    [studio.AppSetting.LANGUAGE]: "en",
  });
  await studio.initI18n();
  const app = h(studio.App, {
    deepLinks: [window.location.href],
    appConfiguration: configuration,
    dataSources: [new studio.FoxgloveWebSocketDataSourceFactory(), new studio.RemoteDataSourceFactory()],
    layoutStorage: layouts,
    extensionLoaders: [],
    enableGlobalCss: true,
  });
  window.ReactDOM.render(app, document.getElementById("root"));
})().catch((e) => {
  console.error("host page failed", e);
  document.body.textContent = `host page failed: ${e}`;
});
