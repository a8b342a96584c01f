//! The FTL crate's integration tests, one test binary (each module was a binary of its own:
//! every one instantiated the generic FTL again, and building them took a third of the test
//! build). `cargo test -p ftl --test integration MODULE::` runs one module.

mod common;
mod tier;

mod asymmetric;
mod combined;
mod flares;
mod fuzz_driver;
mod model;
mod mount_fuzz;
mod no_raw_chip;
mod packed_store;
mod paged;
mod power_off;
mod realtime;
mod region;
mod rtblock;
