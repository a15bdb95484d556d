//! Pseudo-terminal pairs for the device emulators.
//!
//! An emulator holds the master side of a pty; a driver opens the slave (`/dev/pts/N`, or a
//! stable symlink to it) exactly as it would open `/dev/ttyS0`. The emulator never opens the
//! slave itself, so it can tell when the driver has the port open (the master reports a
//! hang-up while no one does), and it reads the line settings the driver chose (the baud
//! rate) through the master, which is how it emulates a device and a host that disagree on
//! the speed. "Unplugging" closes the master (the driver's port fails with an I/O error and
//! the slave path vanishes); "plugging in" again makes a new pair and points the symlink at
//! it.

// Unsafe code: posix_openpt, grantpt, unlockpt, ptsname_r, termios ioctls, poll, read and
// write on the pty (Linux calls).
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What waiting on the master found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ready {
    /// Bytes from the driver are waiting.
    Data,
    /// Nothing arrived before the timeout.
    Timeout,
    /// No one has the slave open.
    Hangup,
}

/// The master side of a pseudo-terminal pair.
pub struct Pty {
    master: OwnedFd,
    slave: PathBuf,
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Pty {
    /// Opens a new pair, non-blocking, with the slave in raw mode (so nothing is echoed or
    /// translated before a driver configures the port).
    pub fn open() -> io::Result<Pty> {
        // SAFETY: plain libc calls on a descriptor we own; ptsname_r writes into our buffer.
        unsafe {
            let fd = cvt(libc::posix_openpt(
                libc::O_RDWR | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC,
            ))?;
            let master = OwnedFd::from_raw_fd(fd);
            cvt(libc::grantpt(fd))?;
            cvt(libc::unlockpt(fd))?;
            let mut name = [0 as libc::c_char; 128];
            let r = libc::ptsname_r(fd, name.as_mut_ptr(), name.len());
            if r != 0 {
                return Err(io::Error::from_raw_os_error(r));
            }
            let slave = PathBuf::from(CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned());
            let mut t: libc::termios = std::mem::zeroed();
            cvt(libc::tcgetattr(fd, &mut t))?;
            libc::cfmakeraw(&mut t);
            cvt(libc::tcsetattr(fd, libc::TCSANOW, &t))?;
            Ok(Pty { master, slave })
        }
    }

    /// The slave's path (`/dev/pts/N`).
    pub fn slave_path(&self) -> &Path {
        &self.slave
    }

    /// The baud rate the slave is set to (what the driver chose), if it can be read.
    pub fn baud(&self) -> Option<u32> {
        // SAFETY: TCGETS2 fills a termios2 we own; on a pty master it reports the slave's
        // settings.
        unsafe {
            let mut t: libc::termios2 = std::mem::zeroed();
            if libc::ioctl(self.master.as_raw_fd(), libc::TCGETS2, &mut t) < 0 {
                return None;
            }
            if t.c_cflag & libc::CBAUD == libc::BOTHER {
                return Some(t.c_ospeed);
            }
            let code = t.c_cflag & libc::CBAUD;
            Some(match code {
                libc::B9600 => 9600,
                libc::B19200 => 19200,
                libc::B38400 => 38400,
                libc::B57600 => 57600,
                libc::B115200 => 115200,
                libc::B500000 => 500000,
                _ => t.c_ospeed,
            })
        }
    }

    /// Waits up to `timeout` for bytes from the driver.
    pub fn wait(&self, timeout: Duration) -> Ready {
        let mut p = libc::pollfd {
            fd: self.master.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one pollfd we own.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        if r <= 0 {
            return Ready::Timeout;
        }
        if p.revents & libc::POLLIN != 0 {
            Ready::Data
        } else if p.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
            Ready::Hangup
        } else {
            Ready::Timeout
        }
    }

    /// Reads what the driver wrote; `Ok(0)` when nothing is there or no one has the slave
    /// open.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: reading into a buffer we own.
        let r = unsafe { libc::read(self.master.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EIO) | Some(libc::EINTR) => Ok(0),
            _ => Err(e),
        }
    }

    /// Writes bytes towards the driver as a serial line would: what the line cannot take
    /// now (no one reading, buffer full) is lost. Returns how many bytes went out.
    pub fn write(&self, bytes: &[u8]) -> usize {
        let mut at = 0;
        let mut spins = 0;
        while at < bytes.len() {
            // SAFETY: writing from a buffer we own.
            let r = unsafe {
                libc::write(
                    self.master.as_raw_fd(),
                    bytes[at..].as_ptr().cast(),
                    bytes.len() - at,
                )
            };
            if r > 0 {
                at += r as usize;
                continue;
            }
            // A full buffer: give a slow reader a moment, then drop the rest.
            spins += 1;
            if spins > 20 {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        at
    }
}

/// Points `link` at `target`, replacing whatever `link` was.
pub fn relink(link: &Path, target: &Path) -> io::Result<()> {
    let tmp = link.with_extension("tmp-link");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)?;
    std::fs::rename(&tmp, link)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn the_master_sees_the_drivers_speed_bytes_and_hangup() {
        let p = Pty::open().unwrap();
        let path = p.slave_path().to_str().unwrap().to_string();
        // Never opened yet: no hang-up is reported, just nothing.
        assert_eq!(p.wait(Duration::from_millis(20)), Ready::Timeout);
        let mut port = tokio_serial::new(&path, 9600)
            .timeout(Duration::from_secs(2))
            .open()
            .unwrap();
        assert_eq!(p.baud(), Some(9600));
        assert_eq!(p.wait(Duration::from_millis(20)), Ready::Timeout);
        port.set_baud_rate(38400).unwrap();
        assert_eq!(p.baud(), Some(38400));
        port.write_all(&[1, 2, 3]).unwrap();
        assert_eq!(p.wait(Duration::from_secs(2)), Ready::Data);
        let mut buf = [0u8; 8];
        assert_eq!(p.read(&mut buf).unwrap(), 3);
        assert_eq!(p.write(&[9, 8, 0x0A, 0x0D]), 4);
        let mut got = [0u8; 4];
        port.read_exact(&mut got).unwrap();
        assert_eq!(got, [9, 8, 0x0A, 0x0D], "raw: no translation");
        drop(port);
        assert_eq!(p.wait(Duration::from_millis(50)), Ready::Hangup);
    }
}
