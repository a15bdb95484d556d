//! Device driver actors. Each driver lives in its own module and registers a factory in
//! the catalog under its name; the core never names a device model.

use crate::catalog::Catalog;

pub mod sim;

/// Registers every shipped driver.
pub fn register_all(catalog: &mut Catalog) {
    sim::register(catalog);
}
