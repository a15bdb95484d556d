"""The navigation devices against the real ``player`` binary: a map file downloaded tile by
tile and compared cell for cell with the file (read here with map_server's rule), the
simulated world as a map, the base's own position under ``O`` beside its full-precision
odometry ``P``, and the localizer's and planner's configs and commands (particles,
waypoints, set pose, global localization, goal, enable, cancel) answered by a stand-in
driver program (nav_standin.py), with the blocking and the asyncio clients."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Callable, List, Tuple

from conftest import Server

from player_client import AsyncClient, Client, MapInfo, PlannerState, Round

W, H = 300, 250


def floor_plan() -> bytes:
    """A binary PGM: a frame of walls, a box, a band of grey, free floor of many shades."""
    px = bytearray()
    for y in range(H):
        for x in range(W):
            if x < 2 or y < 2 or x >= W - 2 or y >= H - 2:
                v = 0
            elif 60 <= x < 90 and 40 <= y < 70:
                v = 20
            elif 120 <= y < 130:
                v = 205
            else:
                v = (x * 7 + y * 13) % 256
            px.append(v)
    return f"P5\n{W} {H}\n255\n".encode() + bytes(px)


def trinary(pgm: bytes, occupied: float, free: float) -> List[int]:
    """map_server's rule over the image, rows from the bottom."""
    px = pgm[-W * H :]
    cells = []
    for row in range(H):
        for col in range(W):
            p = (255 - px[(H - 1 - row) * W + col]) / 255
            cells.append(1 if p > occupied else -1 if p < free else 0)
    return cells


def mapfile_server(make_server: Callable[..., Server], tmp_path: Path) -> Server:
    pgm = floor_plan()
    (tmp_path / "floor.pgm").write_bytes(pgm)
    (tmp_path / "floor.yaml").write_text(
        "image: floor.pgm\nresolution: 0.1\norigin: [-15.0, -12.5, 0.0]\n"
        "negate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n"
    )
    robot = (
        '[[robot.driver]]\ndriver = "mapfile"\ndevices = ["M"]\n'
        f'[robot.driver.params]\nyaml = "{tmp_path / "floor.yaml"}"\n'
    )
    return make_server(robot_toml=robot)


def test_a_map_file_downloads_tile_by_tile_cell_for_cell(make_server, tmp_path):
    server = mapfile_server(make_server, tmp_path)
    with Client.connect(server.address) as c:
        c.request("Mr").check()
        info = c.map_info()
        assert isinstance(info, MapInfo)
        assert (info.width, info.height, info.resolution) == (W, H, 100000)
        assert (info.origin_x, info.origin_y, info.origin_heading) == (-15000, -12500, 0)
        assert len(info.tiles()) > 1
        cells = c.download_map(info)
        assert cells == trinary(floor_plan(), 0.65, 0.196)
        # A tile past the edge is cut to the map; answers are not notices.
        from player_client.nav import TileRequest

        t = c.map_tile(TileRequest(W - 3, H - 2, 50, 50))
        assert (t.rect.width, t.rect.height, len(t.cells)) == (3, 2, 6)
        assert c.take_notices() == []


def test_the_asyncio_client_downloads_the_same_map(make_server, tmp_path):
    server = mapfile_server(make_server, tmp_path)

    async def main() -> List[int]:
        async with await AsyncClient.connect(server.address) as c:
            (await c.request("Mr")).check()
            return await c.download_map()

    assert asyncio.run(main()) == trinary(floor_plan(), 0.65, 0.196)


SIM_AS_O = """
[[robot.driver]]
driver = "sim"
devices = ["p as O", "P", "s", "l"]
[robot.driver.params]
world = "room"

[[robot.driver]]
driver = "mapfile"
devices = ["M"]
[robot.driver.params]
map = "world"
"""


def test_the_bases_own_position_as_o_beside_p_and_the_world_as_a_map(make_server):
    server = make_server(driver_toml=SIM_AS_O)
    with Client.connect(server.address) as c:
        grant = c.request("prOaPrMr")
        assert grant.access("p") == "e", "nothing serves p"
        assert [grant.access(d) for d in "OPM"] == ["a", "r", "r"]
        # p is not served here: the base takes its commands as O (speed 0, turn 30 deg/s).
        c.command("O", bytes.fromhex("0000001e"))
        for _ in range(100):
            r = c.read()
            if r.odometry is not None and r.odometry.turn_rate > 20 and r.precise is not None:
                break
        else:
            raise AssertionError("O never turned")
        o, p = r.odometry, r.precise
        assert o.time == p.time, "one batch, one instant"
        assert abs((p.heading - o.heading + 180) % 360 - 180) <= 0.5
        info = c.map_info()
        cells = c.download_map(info)
        assert info.resolution == 50000 and len(cells) == info.width * info.height
        # The room's edges are walls; its middle has free floor.
        assert all(v == 1 for v in cells[: info.width])
        assert cells.count(-1) > cells.count(1) > 0


def standin_server(make_server: Callable[..., Server]) -> Server:
    """The robot with the stand-in localizer and planner (nav_standin.py) as a program."""
    script = Path(__file__).with_name("nav_standin.py")
    robot = f"""
[[robot.driver]]
driver = "program"
devices = ["H", "G"]
[robot.driver.params]
command = [{json.dumps(sys.executable)}, {json.dumps(str(script))}]
[[robot.driver.params.device]]
code = "H"
data_size = 894
access = "r"
[[robot.driver.params.device]]
code = "G"
data_size = 43
access = "a"
command_size = 12
"""
    return make_server(robot_toml=robot)


def read_until(c: Client, test: Callable[[Round], bool]) -> Round:
    for _ in range(200):
        r = c.read()
        if test(r):
            return r
    raise AssertionError("the stand-in never published what was sent")


def test_particles_waypoints_pose_goal_enable_cancel_through_the_server(make_server):
    server = standin_server(make_server)
    with Client.connect(server.address) as c:
        c.request("HrGa").check()
        # 250 particles come in three answers (100, 100, 50) and are put together.
        p = c.particles()
        assert (p.mean, p.variance, p.first, p.total) == ((1000, -2000, 648000), 4321, 0, 250)
        assert len(p.particles) == 250
        assert [q.pose for q in p.particles[99:102]] == [
            (99, -99, 3600 * 99),
            (100, -100, 3600 * 100),
            (101, -101, 3600 * 101),
        ]
        assert c.waypoints() == ((0, 0, 0), (1500, -250, 45), (3000, 500, 90))
        assert c.take_answers() == [], "every answer was taken by the call that asked"
        # x H s: the stand-in publishes the pose it was given as its hypothesis.
        c.set_pose(-500, 700, 90.0, sd_xy=300.0, sd_heading=10.0)
        r = read_until(c, lambda r: r.localize is not None and r.localize.hypotheses[0].mean[0] == -500)
        h = r.localize.hypotheses[0]
        assert h.mean == (-500, 700, 324000) and h.heading == 90.0
        assert (h.cov[0], h.cov[4], h.cov[8]) == (90000, 90000, 36000**2)
        c.global_localization()
        read_until(c, lambda r: r.localize is not None and r.localize.pending_count == 999)
        # A goal (write access), then disable, cancel.
        c.set_goal(1500, -250, 90)
        r = read_until(c, lambda r: r.planner is not None and r.planner.state == PlannerState.DRIVING)
        assert r.planner.goal == (1500, -250, 90) and r.planner.valid
        assert r.planner.waypoint_count == 3
        c.planner_enable(False)
        read_until(c, lambda r: r.planner is not None and not r.planner.done)
        c.planner_cancel()
        r = read_until(c, lambda r: r.planner is not None and r.planner.state == PlannerState.IDLE)
        assert r.planner.goal == (0, 0, 0)
        assert c.take_notices() == []


def test_a_read_only_client_asks_too_and_the_asyncio_client_gets_the_same(make_server):
    server = standin_server(make_server)

    async def main() -> Tuple[int, Tuple[Tuple[int, int, int], ...]]:
        async with await AsyncClient.connect(server.address) as c:
            (await c.request("HrGr")).check()
            p = await c.particles()
            w = await c.waypoints()
            return len(p.particles), w

    n, w = asyncio.run(main())
    assert n == 250 and len(w) == 3
