//! The `mount` fuzz target (libFuzzer): see `mount_input.rs`, which CI also runs through
//! the std-only driver in `crates/ftl/tests/integration/fuzz_driver.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

include!("mount_input.rs");

fuzz_target!(|data: &[u8]| run_input(data));
