//! The `mount` fuzz target's body (`fuzz/fuzz_targets/mount_input.rs`) driven without
//! libFuzzer, so CI runs it: random byte strings, and structured inputs (host commands, an
//! optional power cut, then damage) that reach the mount with a damaged image far more often
//! than random bytes do. A bounded number of cases each run.

include!("../../../../fuzz/fuzz_targets/mount_input.rs");

use crate::tier;
use proptest::prelude::*;

/// One 4-byte command of the target's input format.
fn command() -> impl Strategy<Value = [u8; 4]> {
    prop_oneof![
        // Host operations (writes, trims, flushes) and a power cut (7).
        (0u8..8, any::<u8>(), any::<u8>(), any::<u8>()).prop_map(|(a, b, c, d)| [a, b, c, d]),
        any::<[u8; 4]>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: tier::cases(300), .. ProptestConfig::default() })]

    /// Arbitrary bytes.
    #[test]
    fn random_inputs(data in prop::collection::vec(any::<u8>(), 0..600)) {
        run_input(&data);
    }

    /// A recovery choice, host commands, the phase separator, then damage commands.
    #[test]
    fn structured_inputs(
        first in any::<u8>(),
        host in prop::collection::vec(command(), 0..120),
        damage in prop::collection::vec(any::<[u8; 4]>(), 0..30),
    ) {
        let mut data = vec![first];
        for c in &host {
            if c[0] != 0xFF {
                data.extend_from_slice(c);
            }
        }
        data.extend_from_slice(&[0xFF, 0, 0, 0]);
        for c in &damage {
            data.extend_from_slice(c);
        }
        run_input(&data);
    }
}
