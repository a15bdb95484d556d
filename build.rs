//! Link options of the `player` binaries.
//!
//! On GNU/Linux the binaries are linked with packed relative relocations
//! (`-z pack-relative-relocs`, glibc 2.36 and binutils 2.38 or later): a position-independent
//! executable's table of addresses to fix up at start shrinks from about 850 kB (24 bytes a
//! pointer, every page of it read by the dynamic loader at each start and then resident)
//! to a few kilobytes of bitmaps. The executable is still position-independent; only the
//! encoding of the table changes. An older linker ignores the option with a warning.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
