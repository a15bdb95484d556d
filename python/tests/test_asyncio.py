"""The asyncio client against a real ``player`` server: the same operations, awaited,
several clients in one event loop."""

from __future__ import annotations

import asyncio
import time

import pytest

from player_client import (
    AsyncClient,
    ConnectionClosed,
    DataMode,
    NoticeKind,
    PlayerTimeout,
    RequestRefused,
)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 120))


def test_async_request_read_and_command(server):
    async def main():
        async with await AsyncClient.connect(server.address, timeout=30) as c:
            (await c.request("srpa")).check()
            r = await c.read()
            assert r.updated == ["s", "p"] and len(r.sonar) == 16
            deadline = time.monotonic() + 30
            p = r.position
            while p.x < 150 and time.monotonic() < deadline:
                await c.set_speed(200, 0)
                p = (await c.read()).position
            assert p.x >= 150
            await c.set_speed(0, 0)
            rounds = [x async for x in c.rounds(3)]
            assert len(rounds) == 3
            g = await c.request("qr")
            with pytest.raises(RequestRefused):
                g.check()

    run(main())


def test_async_clients_share_one_loop(server):
    async def one(spec, hz, n):
        c = await AsyncClient.connect(server.host, server.port, timeout=30)
        try:
            (await c.request(spec)).check()
            await c.set_frequency(hz)
            got = []
            async for r in c:
                got.append(r.updated)
                if len(got) == n:
                    break
            return got
        finally:
            await c.close()

    async def main():
        return await asyncio.gather(one("sr", 10, 5), one("pr", 20, 10), one("lrmr", 5, 3))

    a, b, c = run(main())
    assert a == [["s"]] * 5 and b == [["p"]] * 10 and c == [["l", "m"]] * 3


def test_async_commands_while_another_task_reads(server):
    async def main():
        c = await AsyncClient.connect(server.address, timeout=30)
        (await c.request("pa")).check()
        positions = []

        async def reader():
            async for r in c.rounds(40):
                positions.append(r.position)
                if r.position.x > 100:
                    return

        async def driver():
            while not positions or positions[-1].x <= 100:
                await c.set_speed(150, 0)
                await asyncio.sleep(0.1)

        await asyncio.wait_for(asyncio.gather(reader(), driver()), 60)
        assert positions[-1].x > 100
        await c.close()

    run(main())


def test_async_modes_and_timeouts(server):
    async def main():
        c = await AsyncClient.connect(server.address, timeout=30)
        (await c.request("mr")).check()
        await c.read()
        await c.set_data_mode(DataMode.REQUEST_REPLY)
        c.timeout = 1.0
        try:
            await c.read()
        except PlayerTimeout:
            pass
        with pytest.raises(PlayerTimeout):
            await c.read()
        c.timeout = 30
        await c.request_data()
        assert (await c.read()).misc is not None
        await c.set_timestamps(True)
        await c.set_data_mode(DataMode.PUSH_NEW)
        deadline = time.monotonic() + 30
        r = await c.read_new(2.0)
        while (r.misc is None or r.misc.timestamp is None) and time.monotonic() < deadline:
            r = await c.read_new(2.0)
        assert r.misc.timestamp is not None
        await c.close()

    run(main())


def test_async_client_sees_the_server_close(server):
    async def main():
        c = await AsyncClient.connect(server.address, timeout=30)
        (await c.request("sr")).check()
        await c.read()
        server.stop()
        with pytest.raises(ConnectionClosed):
            for _ in range(100):
                await c.read()
        await c.close()

    run(main())


def test_async_error_channel_and_device_list(server):
    async def main():
        c = await AsyncClient.connect(server.address, timeout=30)
        await c.enable_notices()
        (await c.request("pa")).check()
        await c.read()
        await c.command("p", bytes(5))
        n = await c.wait_notice([NoticeKind.COMMAND_IGNORED], device="p", timeout=20)
        assert n is not None and "5 bytes" in n.text
        devices = {d.device: d for d in await c.list_devices()}
        assert devices["p"].writers == 1 and devices["p"].driver == "sim"
        assert (await c.read()).position is not None
        await c.close()

    run(main())
