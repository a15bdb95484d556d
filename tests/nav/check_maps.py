#!/usr/bin/env python3
"""player-nav's map loading and distance transform, checked by an independent implementation.

map_server's "trinary" rule, written here from its documentation (numpy): each pixel's value
v on the 0-255 scale is the average of its channels (grey + alpha counts as R = G = B = grey
plus alpha, alpha averaged in as map_server does in trinary mode; 16-bit samples are divided
by 257, a PGM's by maxval / 255); p = (255 - v) / 255, or v / 255 with negate; occupied
(+1) when p > occupied_thresh, free (-1) when p < free_thresh, unknown (0) otherwise; the
image's top row is the map's top row. Player's rule: the same p with 0.95 and 0.1.

Compared cell for cell with `player-nav cells` on the maps of ../shared/nav/maps (when
present) and on random PGM (P5 8- and 16-bit, P2) and PNG (grey, grey + alpha, RGB, RGBA,
palette with transparency, 16-bit grey) maps made here with random thresholds and negate;
and `player-nav distance` against scipy.ndimage.distance_transform_edt, within 0.5 cell.

Run: PLAYER_NAV_BIN=target/debug/player-nav python3 tests/nav/check_maps.py (or pytest).
"""

import os
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np
from scipy import ndimage

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("PLAYER_NAV_BIN", str(ROOT / "target" / "debug" / "player-nav"))


def data_dir():
    d = os.environ.get("PLAYER_NAV_DATA") or str(ROOT / ".." / "shared" / "nav")
    return Path(d) if Path(d).is_dir() else None


# ---------------------------------------------------------------- the rule, independently


def values_255(pixels, maxval):
    """Per pixel, the average of its channels on the 0-255 scale. `pixels`: (h, w, c)."""
    c = pixels.shape[2]
    px = pixels.astype(np.float64)
    if c == 2:  # grey + alpha: R = G = B = grey, plus alpha
        total, n = 3.0 * px[:, :, 0] + px[:, :, 1], 4.0
    else:
        total, n = px.sum(axis=2), float(c)
    avg = total / n
    if maxval == 255:
        return avg
    if maxval == 65535:
        return avg / 257.0
    return avg * 255.0 / maxval


def trinary(pixels, maxval, negate, occupied, free):
    v = values_255(pixels, maxval)
    p = v / 255.0 if negate else (255.0 - v) / 255.0
    cells = np.zeros(v.shape, dtype=np.int8)
    cells[p < free] = -1
    cells[p > occupied] = 1  # occupied wins, as map_server tests it first
    return np.flipud(cells)


# ---------------------------------------------------------------- image files, by hand


def read_pgm(path):
    """(pixels (h, w, 1), maxval) of a P5 or P2 file."""
    data = Path(path).read_bytes()
    magic = data[:2]
    fields, i = [], 2
    while len(fields) < 3:
        while data[i : i + 1].isspace():
            i += 1
        if data[i : i + 1] == b"#":
            while data[i : i + 1] not in (b"\n", b"\r"):
                i += 1
            continue
        j = i
        while data[j : j + 1].isdigit():
            j += 1
        fields.append(int(data[i:j]))
        i = j
    w, h, maxval = fields
    if magic == b"P5":
        raw = data[i + 1 :]
        dtype = ">u2" if maxval > 255 else "u1"
        px = np.frombuffer(raw, dtype=dtype, count=w * h)
    else:
        px = np.array(data[i:].split()[: w * h], dtype=np.int64)
    return px.reshape(h, w, 1), maxval


def write_pgm(path, pixels, maxval, ascii_=False):
    h, w = pixels.shape[:2]
    head = f"{'P2' if ascii_ else 'P5'}\n# random test map\n{w} {h}\n{maxval}\n".encode()
    if ascii_:
        body = "\n".join(" ".join(str(int(x)) for x in row) for row in pixels[:, :, 0]).encode() + b"\n"
    elif maxval > 255:
        body = pixels[:, :, 0].astype(">u2").tobytes()
    else:
        body = pixels[:, :, 0].astype("u1").tobytes()
    Path(path).write_bytes(head + body)


def png_chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def write_png(path, pixels, color_type, depth=8, palette=None, trns=None):
    h, w = pixels.shape[:2]
    if depth == 16:
        rows = [pixels[r].astype(">u2").tobytes() for r in range(h)]
    else:
        rows = [pixels[r].astype("u1").tobytes() for r in range(h)]
    raw = b"".join(b"\x00" + r for r in rows)
    out = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, 0))
    if palette is not None:
        out += png_chunk(b"PLTE", bytes(palette.astype("u1").flatten()))
    if trns is not None:
        out += png_chunk(b"tRNS", bytes(trns.astype("u1")))
    out += png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b"")
    Path(path).write_bytes(out)


def write_yaml(path, image, negate, occupied, free, res=0.05):
    Path(path).write_text(
        f"image: {image}\nresolution: {res}\norigin: [-1.5, 2.25, 0.0]\n"
        f"negate: {int(negate)}\noccupied_thresh: {occupied!r}\nfree_thresh: {free!r}\n"
    )


# ---------------------------------------------------------------- player-nav


def cells_of(yaml):
    with tempfile.TemporaryDirectory() as t:
        out = Path(t) / "cells.bin"
        r = subprocess.run([BIN, "cells", str(yaml), "-o", str(out)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        info = dict(kv.split("=", 1) for kv in r.stdout.split()[1:])
        w, h = int(info["width"]), int(info["height"])
        return np.frombuffer(out.read_bytes(), dtype=np.int8).reshape(h, w)


def player_cells_of(image, res, negate):
    with tempfile.TemporaryDirectory() as t:
        out = Path(t) / "cells.bin"
        args = [BIN, "cells", "--player", str(image), "--resolution", str(res), "-o", str(out)]
        if negate:
            args.append("--negate")
        r = subprocess.run(args, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        info = dict(kv.split("=", 1) for kv in r.stdout.split()[1:])
        w, h = int(info["width"]), int(info["height"])
        ox, oy, _ = (float(x) for x in info["origin"].split(","))
        assert abs(ox + w * res / 2) < 1e-9 and abs(oy + h * res / 2) < 1e-9, info
        return np.frombuffer(out.read_bytes(), dtype=np.int8).reshape(h, w)


def distance_of(yaml, shape):
    with tempfile.TemporaryDirectory() as t:
        out = Path(t) / "dist.bin"
        r = subprocess.run([BIN, "distance", str(yaml), "-o", str(out)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return np.frombuffer(out.read_bytes(), dtype="<f4").reshape(shape)


def check_distance(yaml, cells):
    if not (cells == 1).any():
        return
    ours = distance_of(yaml, cells.shape)
    theirs = ndimage.distance_transform_edt(cells != 1)
    worst = float(np.max(np.abs(ours - theirs)))
    assert worst <= 0.5, f"{yaml}: distance differs from scipy by {worst} cells"


# ---------------------------------------------------------------- the tests


def test_shared_maps_cell_for_cell():
    data = data_dir()
    if data is None:
        print("skipped: no ../shared/nav/maps beside the checkout (or $PLAYER_NAV_DATA)")
        return
    yamls = sorted((data / "maps").glob("*.yaml"))
    assert yamls, "no map in shared/nav/maps"
    for y in yamls:
        meta = {}
        for line in y.read_text().splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                meta[k.strip()] = v.strip()
        pixels, maxval = read_pgm(y.parent / meta["image"])
        want = trinary(pixels, maxval, meta["negate"] in ("1", "true"), float(meta["occupied_thresh"]), float(meta["free_thresh"]))
        got = cells_of(y)
        assert got.shape == want.shape, (y, got.shape, want.shape)
        diff = int((got != want).sum())
        assert diff == 0, f"{y.name}: {diff} cells differ"
        check_distance(y, got)
        print(f"{y.name}: {got.shape[1]} x {got.shape[0]} cells identical; distance within 0.5 cell of scipy")


def random_case(rng, kind, t):
    h, w = int(rng.integers(1, 60)), int(rng.integers(1, 60))
    palette = trns = None
    if kind in ("p5", "p2"):
        maxval = int(rng.choice([255, 255, 15, 1000]))
        pixels = rng.integers(0, maxval + 1, (h, w, 1))
        name = f"m.{kind}.pgm"
        write_pgm(t / name, pixels, maxval, ascii_=(kind == "p2"))
    elif kind == "p5wide":
        maxval = 65535
        pixels = rng.integers(0, 65536, (h, w, 1))
        name = "m.pgm"
        write_pgm(t / name, pixels, maxval)
    else:
        maxval = 255
        ct, c, depth = {"grey": (0, 1, 8), "greyalpha": (4, 2, 8), "rgb": (2, 3, 8), "rgba": (6, 4, 8), "grey16": (0, 1, 16), "palette": (3, 1, 8)}[kind]
        if depth == 16:
            maxval = 65535
        if kind == "palette":
            n = int(rng.integers(2, 17))
            palette = rng.integers(0, 256, (n, 3))
            trns = rng.integers(0, 256, int(rng.integers(0, n + 1)))
            idx = rng.integers(0, n, (h, w))
            write_png(t / "m.png", idx, ct, palette=palette, trns=trns if len(trns) else None)
            alpha = np.full(n, 255)
            alpha[: len(trns)] = trns
            rgba = np.concatenate([palette, alpha[:, None]], axis=1)
            pixels = rgba[idx] if len(trns) else palette[idx]
        else:
            pixels = rng.integers(0, maxval + 1, (h, w, c))
            write_png(t / "m.png", pixels, ct, depth=depth)
        name = "m.png"
    negate = bool(rng.integers(0, 2))
    if rng.random() < 0.5:
        # Thresholds anywhere, free <= occupied.
        a, b = sorted(rng.random(2))
    else:
        # Thresholds equal to some pixels' own p, where "above" and "below" are strict.
        v = values_255(pixels, maxval).flatten()
        ps = v / 255.0 if negate else (255.0 - v) / 255.0
        a, b = sorted(rng.choice(ps, 2))
    return name, pixels, maxval, negate, float(b), float(a)


def test_random_images_cell_for_cell():
    rng = np.random.default_rng(31)
    kinds = ["p5", "p2", "p5wide", "grey", "greyalpha", "rgb", "rgba", "grey16", "palette"]
    n = 0
    for round_ in range(12):
        for kind in kinds:
            with tempfile.TemporaryDirectory() as d:
                t = Path(d)
                name, pixels, maxval, negate, occ, free = random_case(rng, kind, t)
                write_yaml(t / "m.yaml", name, negate, occ, free)
                want = trinary(pixels, maxval, negate, occ, free)
                got = cells_of(t / "m.yaml")
                assert got.shape == want.shape, (kind, got.shape, want.shape)
                bad = int((got != want).sum())
                assert bad == 0, f"{kind} (round {round_}, negate {negate}, {occ}/{free}): {bad} cells differ"
                check_distance(t / "m.yaml", got)
                # Player's rule on the same image.
                pwant = trinary(pixels, maxval, negate, 0.95, 0.1)
                pgot = player_cells_of(t / name, 0.1, negate)
                assert (pgot == pwant).all(), f"{kind}: Player's rule differs"
                n += 1
    print(f"{n} random maps identical (map_server's and Player's rules); distances within 0.5 cell")


def main():
    tests = [test_shared_maps_cell_for_cell, test_random_images_cell_for_cell]
    passed = failed = 0
    for t in tests:
        try:
            t()
            passed += 1
        except AssertionError as e:
            failed += 1
            print(f"FAILED {t.__name__}: {e}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
