"""A driver program that floods the server with data frames once its device is set up
(tests/program.rs: it must be dropped for exceeding max_rate while other clients keep their
rate)."""

from player_driver import Driver


class Flood(Driver):
    def on_setup(self, device):
        self.after(0.0, self.flood)
        return None

    def flood(self):
        while True:
            self.publish("q", b"\x00\x01")


if __name__ == "__main__":
    Flood().run()
