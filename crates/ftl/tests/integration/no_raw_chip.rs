//! The FTL reaches the chip only through the controller's data path (error draws, records)
//! and its admin operations (erase, SLC mode, charged block-header reads). A raw chip handle
//! could read without error draws or program without a record — a free oracle — so the
//! sources may use the chip directly only for datasheet facts (configuration, geometry,
//! pairing) and cache hints; its block table only in the test-only `verify` (the
//! substrate's, DFTL's); its power state only in the substrate's `powered`. Unit-test
//! modules (`tests.rs`) are harnesses, not FTL code: they may cut power.
//!
//! The kernels reach the controller's data path only through the substrate (the flash
//! device layer): its one charged read path (`sense`), its one program path with its one
//! classification of failures and refusals (`program_page`, `program_classified`), its
//! one erase path (`erase_block`) and its header reads.

use std::path::Path;

fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
}

#[test]
fn the_ftl_holds_no_raw_chip_handle() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 5);
    let allowed = [
        "config",
        "geometry",
        "pairing",
        "prefetch_page",
        "prefetch_flat",
    ];
    for (name, text) in &files {
        // Unit-test modules arm power cuts and power the chip on, as harnesses do.
        if name.ends_with("/tests.rs") {
            continue;
        }
        let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        // The controller's storage introspection only where DFTL rebuilds the simulator's
        // record of its flash units after a mount (for `verify` and `mapping`), through the
        // substrate's one wrapper of it.
        if squeezed.contains("inspect_stored(") {
            let calls = squeezed.matches("inspect_stored(").count();
            let wrapper = name.ends_with("substrate/mod.rs")
                && calls == 2
                && squeezed.contains("self.ctl.inspect_stored(addr,buf)");
            assert!(
                wrapper || (name.ends_with("dftl/mount.rs") && calls == 1),
                "{name} reads stored bytes without a chip operation"
            );
        }
        // The controller, mutably, is the harness's (the volume's `controller_mut`), never a
        // kernel's.
        if squeezed.contains("controller_for_harness()") {
            assert!(
                name.ends_with("/scheme.rs") || name.ends_with("substrate/mod.rs"),
                "{name} takes the controller mutably around the substrate"
            );
        }
        assert!(
            !squeezed.contains("chip_mut()"),
            "{name} takes a mutable raw chip"
        );
        for (i, _) in squeezed.match_indices(".chip().") {
            let rest = &squeezed[i + ".chip().".len()..];
            let method: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // Whether the chip has power is whether the firmware runs at all, not flash
            // content: the substrate's `powered`, every request's first step.
            let ok = allowed.contains(&method.as_str())
                || (method == "block_info"
                    && (name.ends_with("substrate/blocks.rs") || name.ends_with("dftl/verify.rs")))
                || (method == "is_powered" && name.ends_with("substrate/mod.rs"));
            assert!(ok, "{name} calls chip().{method}() directly");
        }
    }
}

/// Reads, programs and erases outside `substrate/` would bypass the one path that charges
/// them, keeps their die busy and classifies their failures.
#[test]
fn kernels_reach_the_controller_only_through_the_substrate() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut seen = 0;
    for (name, text) in &files {
        let inside = name.contains("/substrate/");
        let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        for (i, _) in squeezed.match_indices("ctl.") {
            let rest = &squeezed[i + "ctl.".len()..];
            let method: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let data_path = ["read", "program", "erase"]
                .iter()
                .any(|p| method.starts_with(p));
            if data_path {
                seen += inside as usize;
                assert!(
                    inside || name.ends_with("/tests.rs"),
                    "{name} calls the controller's {method}() around the substrate"
                );
            }
        }
    }
    // The substrate itself does (the test looks where it should).
    assert!(seen >= 5, "only {seen} data-path calls found in substrate/");
}
