#!/usr/bin/env python3
"""The Debian package, installed and run: called by tests/package/run.sh with the .deb.

Each test is a function `test_*`, run in order (later ones use the installed package);
the last line printed is `N passed, M failed`. Needs root (dpkg -i, the `player` user),
lintian and systemd-analyze (run.sh installs them). The server is driven with the
project's Python client (python/player_client, standard library only).
"""

import os
import pwd
import grp
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
from player_client import Client  # noqa: E402

DEB = sys.argv[1] if len(sys.argv) > 1 else None
TIMEOUT = 10.0
PLAYER = "/usr/bin/player"
CONF = "/etc/player/robot.toml"
UNIT = "/lib/systemd/system/player.service"
MAN_PAGES = {
    "player": "/usr/share/man/man1/player.1.gz",
    "player-cli": "/usr/share/man/man1/player-cli.1.gz",
    "player-emulate": "/usr/share/man/man1/player-emulate.1.gz",
    "player.toml": "/usr/share/man/man5/player.toml.5.gz",
}


def run(*cmd, check=True, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Daemon:
    """The packaged player, run as the `player` user (as the unit does) with NOTIFY_SOCKET
    on a datagram socket this test reads."""

    def __init__(self, config, port, watchdog_usec=None):
        self.dir = tempfile.mkdtemp(prefix="player-package-")
        os.chmod(self.dir, 0o755)
        self.config = os.path.join(self.dir, "robot.toml")
        with open(self.config, "w") as f:
            f.write(config)
        os.chmod(self.config, 0o644)
        self.sock_path = os.path.join(self.dir, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.sock_path)
        os.chmod(self.sock_path, 0o777)
        env = {"PATH": "/usr/bin:/bin", "NOTIFY_SOCKET": self.sock_path}
        if watchdog_usec:
            env["WATCHDOG_USEC"] = str(watchdog_usec)
        self.log = open(os.path.join(self.dir, "log"), "w+")
        self.port = port
        user = pwd.getpwnam("player")
        self.proc = subprocess.Popen(
            [PLAYER, "--config", self.config, "-gp", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            user=user.pw_uid,
            group=user.pw_gid,
            extra_groups=[grp.getgrnam("dialout").gr_gid],
        )

    def message(self, wait):
        self.sock.settimeout(wait)
        try:
            return self.sock.recv(4096).decode()
        except socket.timeout:
            return None

    def wait_message(self, what):
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            m = self.message(0.2)
            if m is not None and what in m:
                return m, time.monotonic()
        raise AssertionError(f"no {what!r} within {TIMEOUT} s; log:\n{self.read_log()}")

    def read_log(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def wait_log(self, what):
        deadline = time.monotonic() + TIMEOUT
        while what not in self.read_log():
            assert time.monotonic() < deadline, f"no {what!r} in the log:\n{self.read_log()}"
            time.sleep(0.02)

    def client(self):
        return Client.connect("127.0.0.1", self.port, timeout=TIMEOUT)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        m, _ = self.wait_message("STOPPING=1")
        assert self.proc.wait(TIMEOUT) == 0, self.read_log()
        self.sock.close()
        return m

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def packaged_config(key=""):
    with open(CONF) as f:
        text = f.read()
    return text.replace('key = ""', f'key = "{key}"', 1)


# ------------------------------------------------------------------------------ tests


def test_the_package_lists_the_files():
    out = run("dpkg-deb", "-c", DEB).stdout
    for path in [
        "./usr/bin/player",
        "./usr/bin/player-cli",
        "./usr/bin/player-emulate",
        "./lib/systemd/system/player.service",
        "./etc/player/robot.toml",
        "./usr/share/doc/player/copyright",
        "./usr/share/doc/player/README.md",
        "./usr/share/doc/player/docs/daemon.md",
        "./usr/share/doc/player/docs/clients-of-2000.md",
        "./usr/share/doc/player/docs/hardware/p2os.md",
        "./usr/share/doc/player/changelog.Debian.gz",
    ] + ["." + p for p in MAN_PAGES.values()]:
        assert f" {path}\n" in out, f"{path} not in the package:\n{out}"
    name = run("dpkg-deb", "-f", DEB, "Package").stdout
    assert name.strip() == "player"
    ctrl = tempfile.mkdtemp()
    run("dpkg-deb", "-e", DEB, ctrl)
    with open(os.path.join(ctrl, "conffiles")) as f:
        assert "/etc/player/robot.toml" in f.read().split()
    for script in ["postinst", "prerm", "postrm"]:
        assert os.access(os.path.join(ctrl, script), os.X_OK), script


def test_lintian_reports_no_error():
    # Info and pedantic tags shown too, so a lesser complaint about a manual page is seen.
    r = run("lintian", "--fail-on", "error", "--display-info", "--pedantic", DEB, check=False)
    errors = [l for l in r.stdout.splitlines() if l.startswith("E:")]
    assert r.returncode == 0 and not errors, r.stdout + r.stderr
    # Nothing about the manual pages: none missing (no-manual-page), none uncompressed,
    # no groff warning when lintian renders them, no bad whatis line.
    tags = [(l.split() + ["", "", ""])[2] for l in r.stdout.splitlines()]
    man = [t for t in tags if any(w in t for w in ("manpage", "manual-page", "groff", "whatis"))]
    assert not man, "\n".join(man)
    print(f"    lintian: {len(r.stdout.splitlines())} lines, no error, nothing on manual pages")
    for line in r.stdout.splitlines():
        print(f"      {line}")


def test_dpkg_installs_it_with_the_player_user_in_dialout():
    # Minimal (Docker) images often exclude /usr/share/man/* from every package; include it.
    run("dpkg", "--path-include=/usr/share/man/*", "-i", DEB)
    for f in [PLAYER, "/usr/bin/player-cli", "/usr/bin/player-emulate", UNIT, CONF]:
        assert os.path.exists(f), f
    user = pwd.getpwnam("player")
    assert user.pw_uid < 1000, "a system user"
    groups = run("id", "-nG", "player").stdout.split()
    assert "dialout" in groups, groups
    st = os.stat("/var/lib/player")
    assert st.st_uid == user.pw_uid, "the recording directory belongs to player"
    status = run("dpkg-query", "-W", "-f=${Status}", "player").stdout
    assert status == "install ok installed", status


def test_the_manual_pages_render_with_man_without_a_warning():
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MANPAGER="cat", PAGER="cat")
    for name, path in MAN_PAGES.items():
        assert os.path.exists(path), path
        r = run("man", "--warnings", "-E", "UTF-8", "-l", path, env=env)
        assert not r.stderr.strip(), f"{path}: {r.stderr}"
        title = name.upper() + ("(5)" if path.endswith(".5.gz") else "(1)")
        assert r.stdout.lstrip().startswith(title), f"{path}:\n{r.stdout[:200]}"
        # Found by name, as a user types it.
        assert run("man", "-w", name, env=env).stdout.strip() == path, name
    page = run("man", "player", env=env).stdout
    for words in ["--check-config", "SIGHUP", "EXIT STATUS", "/etc/player/robot.toml"]:
        assert words in page, words
    page = run("man", "5", "player.toml", env=env).stdout
    for words in ["max_clients", "tls_cert", "[ros2]", "The replay driver"]:
        assert words in page, words
    print(f"    {len(MAN_PAGES)} pages render, found by name")


def test_systemd_analyze_verify_accepts_the_unit():
    r = run("systemd-analyze", "verify", UNIT, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    mine = [l for l in (r.stdout + r.stderr).splitlines() if "player.service" in l]
    assert not mine, mine
    with open(UNIT) as f:
        unit = f.read()
    for line in [
        "Type=notify",
        "WatchdogSec=",
        "ProtectSystem=strict",
        "ProtectHome=true",
        "PrivateTmp=true",
        "NoNewPrivileges=true",
        "ReadWritePaths=/var/lib/player",
        "SupplementaryGroups=dialout",
        "Restart=on-failure",
        "ExecStartPre=/usr/bin/player --check-config /etc/player/robot.toml",
        "ExecReload=kill -HUP $MAINPID",
        "User=player",
    ]:
        assert line in unit, line


def test_check_config_accepts_the_installed_configuration():
    r = run(PLAYER, "--check-config", CONF)
    assert "robot 'pioneer' on 0.0.0.0:6665" in r.stdout, r.stdout


def test_check_config_names_each_error_of_the_broken_files():
    broken = os.path.join(ROOT, "tests", "package", "broken")
    for name in sorted(os.listdir(broken)):
        path = os.path.join(broken, name)
        with open(path) as f:
            expected = [l[len("# expect: "):] for l in f.read().splitlines() if l.startswith("# expect: ")]
        r = run(PLAYER, "--check-config", path, check=False)
        assert r.returncode == 1, f"{name}: exit {r.returncode}"
        for e in expected:
            assert f"  {e}: " in r.stderr, f"{name}: {e} not named in\n{r.stderr}"


def test_notify_ready_after_the_port_listens_watchdog_status_stopping():
    port = free_port()
    d = Daemon(packaged_config(), port, watchdog_usec=400000)
    try:
        ready, _ = d.wait_message("READY=1")
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        assert "STATUS=serving: 1 robot" in ready, ready
        _, last = d.wait_message("WATCHDOG=1")
        gaps = []
        while len(gaps) < 6:
            _, at = d.wait_message("WATCHDOG=1")
            gaps.append(at - last)
            last = at
        assert all(0.12 <= g <= 0.35 for g in gaps), gaps
        print(f"    watchdog every {sum(gaps) / len(gaps) * 1000:.0f} ms (WATCHDOG_USEC 400 ms)")
        c = d.client()
        c.request("pr")
        d.wait_message("STATUS=serving: 1 robot, 1 client")
        # Stopped: no WATCHDOG=1 for a second (this wait is the proof).
        d.proc.send_signal(signal.SIGSTOP)
        while d.message(0.15) is not None:
            pass
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            m = d.message(0.1)
            assert m is None, f"a stopped server sent {m!r}"
        d.proc.send_signal(signal.SIGCONT)
        d.wait_message("WATCHDOG=1")
        c.close()
        m = d.stop()
        assert "STATUS=stopping (SIGTERM)" in m, m
    finally:
        d.kill()


def notice(c, kind):
    n = c.wait_notice(kinds=[kind], timeout=TIMEOUT)
    assert n is not None, f"no notice of kind {kind}"
    return n


def speed_until(c, ok, what):
    deadline = time.monotonic() + TIMEOUT
    while True:
        s = c.read().position.speed
        if ok(s):
            return
        assert time.monotonic() < deadline, what


def test_sighup_with_a_new_key_old_key_reads_but_cannot_command_new_key_can():
    port = free_port()
    d = Daemon(packaged_config("old-key"), port)
    try:
        d.wait_message("READY=1")
        old = d.client()
        old.enable_notices()
        old.present_key("old-key")
        assert notice(old, "a").text == "key accepted: write access"
        old.request("pa")
        old.set_speed(200, 0)
        speed_until(old, lambda s: s >= 150, "the old key drives")
        with open(d.config, "w") as f:
            f.write(packaged_config("new-key"))
        d.proc.send_signal(signal.SIGHUP)
        n = notice(old, "a")
        assert n.text.startswith("configuration reloaded: write access withdrawn"), n
        old.set_speed(300, 0)
        assert "no write access" in notice(old, "c").text
        speed_until(old, lambda s: s == 0, "the robot stops")
        for _ in range(3):
            old.read()
        new = d.client()
        new.enable_notices()
        new.present_key("new-key")
        assert notice(new, "a").text == "key accepted: write access"
        new.request("pa")
        deadline = time.monotonic() + TIMEOUT
        while old.read().position.speed < 150:
            new.set_speed(250, 0)
            assert time.monotonic() < deadline, "the new key drives"
        d.wait_log("configuration reloaded")
        old.close()
        new.close()
        d.stop()
    finally:
        d.kill()


def test_dpkg_r_removes_it_cleanly():
    run("dpkg", "-r", "player")
    for f in [PLAYER, "/usr/bin/player-cli", "/usr/bin/player-emulate", UNIT, *MAN_PAGES.values()]:
        assert not os.path.exists(f), f
    status = run("dpkg-query", "-W", "-f=${Status}", "player").stdout
    assert status == "deinstall ok config-files", status
    assert os.path.exists(CONF), "a conffile stays until purge"
    run("dpkg", "-P", "player")
    assert not os.path.exists(CONF)
    assert not os.path.exists("/var/lib/player")
    r = run("dpkg-query", "-W", "player", check=False)
    assert r.returncode != 0, "purged"


def main():
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)]
    passed = failed = 0
    for name, f in tests:
        t0 = time.monotonic()
        try:
            f()
            passed += 1
            print(f"ok   {name} ({time.monotonic() - t0:.1f} s)", flush=True)
        except Exception:
            failed += 1
            print(f"FAIL {name}", flush=True)
            traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
