// Serves Foxglove Studio 1.48 (npm's @foxglove/studio-base bundle, installed at test time)
// with our host page (studio/), React 17 as globals, player's preset layout
// (docs/foxglove-layout.json) and, under /files/, files of a directory with HTTP Range
// support (how Studio reads a remote recording). Loopback only.
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const assets = path.join(path.dirname(require.resolve("@foxglove/studio-base/package.json")), "assets");
const reactDir = path.dirname(require.resolve("react/package.json"));
const reactDomDir = path.dirname(require.resolve("react-dom/package.json"));

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".png": "image/png",
  ".svg": "image/svg+xml",
  ".woff2": "font/woff2",
  ".ttf": "font/ttf",
  ".mcap": "application/octet-stream",
};

/** The file a URL path names, or null (no path may leave its directory). */
function resolve(urlPath, filesDir) {
  const fixed = {
    "/": path.join(here, "studio", "index.html"),
    "/index.html": path.join(here, "studio", "index.html"),
    "/host.js": path.join(here, "studio", "host.js"),
    "/layout.json": path.join(here, "..", "..", "docs", "foxglove-layout.json"),
    "/vendor/react.js": path.join(reactDir, "umd", "react.production.min.js"),
    "/vendor/react-dom.js": path.join(reactDomDir, "umd", "react-dom.production.min.js"),
  };
  if (fixed[urlPath]) return fixed[urlPath];
  const under = (dir, rest) => {
    const p = path.resolve(dir, "." + path.posix.normalize("/" + rest));
    return p.startsWith(dir + path.sep) ? p : null;
  };
  if (urlPath.startsWith("/studio/")) return under(assets, urlPath.slice("/studio".length));
  if (filesDir && urlPath.startsWith("/files/")) return under(filesDir, urlPath.slice("/files".length));
  return null;
}

/**
 * Starts the server on a free loopback port; `filesDir` (optional) is served under /files/;
 * `layout` (optional, a layout object) is served as /layout.json instead of the preset.
 * Resolves to { url, port, requests, close() }; `requests` lists "METHOD path range" lines.
 */
export function startStudioServer({ filesDir, layout } = {}) {
  const requests = [];
  const server = http.createServer((req, res) => {
    const urlPath = decodeURIComponent(new URL(req.url, "http://x").pathname);
    requests.push(`${req.method} ${urlPath} ${req.headers.range ?? ""}`.trim());
    if (layout && urlPath === "/layout.json") {
      res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" });
      res.end(JSON.stringify(layout));
      return;
    }
    const file = resolve(urlPath, filesDir && path.resolve(filesDir));
    let stat;
    try {
      stat = file && fs.statSync(file);
    } catch {
      stat = null;
    }
    if (!stat || !stat.isFile()) {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not found");
      return;
    }
    const headers = {
      "content-type": TYPES[path.extname(file)] ?? "application/octet-stream",
      "accept-ranges": "bytes",
      "access-control-allow-origin": "*",
      "cache-control": "no-store",
    };
    const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? "");
    if (req.headers.range && range) {
      let start = range[1] === "" ? stat.size - Number(range[2]) : Number(range[1]);
      let end = range[1] === "" || range[2] === "" ? stat.size - 1 : Number(range[2]);
      end = Math.min(end, stat.size - 1);
      if (!(start >= 0 && start <= end)) {
        res.writeHead(416, { "content-range": `bytes */${stat.size}` });
        res.end();
        return;
      }
      res.writeHead(206, {
        ...headers,
        "content-range": `bytes ${start}-${end}/${stat.size}`,
        "content-length": end - start + 1,
      });
      if (req.method === "HEAD") return res.end();
      fs.createReadStream(file, { start, end }).pipe(res);
      return;
    }
    res.writeHead(200, { ...headers, "content-length": stat.size });
    if (req.method === "HEAD") return res.end();
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolveStart, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolveStart({
        port,
        url: `http://127.0.0.1:${port}/`,
        requests,
        close: () =>
          new Promise((r) => {
            server.closeAllConnections?.();
            server.close(() => r());
          }),
      });
    });
  });
}
