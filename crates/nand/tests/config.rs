//! Chip TOML files: presets with overrides, full files, and errors naming the bad key.

use nand::{ChipConfig, PRESET_NAMES};

fn err(text: &str) -> String {
    ChipConfig::from_toml_str(text).unwrap_err().to_string()
}

#[test]
fn every_preset_round_trips_through_toml() {
    for name in PRESET_NAMES {
        let c = ChipConfig::preset(name).unwrap();
        let text = c.to_toml_string();
        assert_eq!(ChipConfig::from_toml_str(&text).unwrap(), c, "{name}");
    }
}

#[test]
fn presets_match_the_papers() {
    let m = ChipConfig::preset("micron-29f64g").unwrap();
    assert_eq!((m.geometry.page_size, m.geometry.spare_size), (8192, 448));
    assert_eq!(m.geometry.pages_per_block, 256);
    assert_eq!(m.geometry.total_blocks(), 4096);
    assert_eq!(m.geometry.planes_per_die, 2);
    assert_eq!(
        (
            m.timing.read_lsb_ns,
            m.timing.program_msb_ns,
            m.timing.erase_ns
        ),
        (75_000, 1_300_000, 3_800_000)
    );
    assert_eq!(m.reliability.endurance, 3000);
    let s = ChipConfig::preset("mlc-20nm").unwrap();
    assert_eq!(s.geometry.capacity_bytes(), 16 << 30);
    assert_eq!(
        (
            s.timing.read_lsb_ns,
            s.timing.program_lsb_ns,
            s.timing.erase_ns,
            s.timing.transfer_ps_per_byte
        ),
        (80_000, 1_600_000, 1_500_000, 25_000)
    );
    let f = ChipConfig::preset("flares-mlc-3x").unwrap();
    assert_eq!(
        (
            f.geometry.page_size,
            f.geometry.spare_size,
            f.reliability.endurance
        ),
        (4096, 224, 10_000)
    );
    assert_eq!(
        (f.timing.read_lsb_ns, f.timing.program_lsb_ns),
        (75_000, 800_000)
    );
    let k = ChipConfig::preset("k9k8g08u0b").unwrap();
    assert_eq!(
        (
            k.geometry.planes_per_die,
            k.geometry.blocks_per_plane,
            k.geometry.pages_per_block
        ),
        (4, 2048, 64)
    );
    assert_eq!(k.geometry.capacity_bytes(), 1 << 30);
    assert_eq!(
        (
            k.timing.read_lsb_ns,
            k.timing.program_lsb_ns,
            k.timing.erase_ns
        ),
        (25_000, 200_000, 1_500_000)
    );
    assert_eq!(k.reliability.endurance, 100_000);
    let d = ChipConfig::preset("slc-1g-dcr").unwrap();
    assert_eq!(d.geometry.capacity_bytes(), 1 << 30);
    assert_eq!(
        (
            d.geometry.page_size,
            d.geometry.spare_size,
            d.geometry.pages_per_block
        ),
        (2048, 64, 64)
    );
}

#[test]
fn preset_with_overrides() {
    let c = ChipConfig::from_toml_str(
        "preset = \"k9k8g08u0b\"\nseed = 9\n[geometry]\nblocks_per_plane = 16\n[timing]\nprogram_lsb_ns = 180000\n",
    )
    .unwrap();
    assert_eq!(c.seed, 9);
    assert_eq!(c.geometry.blocks_per_plane, 16);
    assert_eq!(c.geometry.planes_per_die, 4);
    assert_eq!(c.timing.program_lsb_ns, 180_000);
    assert_eq!(c.timing.read_lsb_ns, 25_000);
}

#[test]
fn unknown_keys_are_rejected_by_name() {
    assert!(err("preset = \"tiny-slc\"\ncolour = 1\n").starts_with("colour: unknown key"));
    assert!(err("preset = \"tiny-slc\"\n[geometry]\npage = 1\n")
        .starts_with("geometry.page: unknown key"));
    let full = ChipConfig::preset("tiny-slc").unwrap().to_toml_string();
    let e = err(&full.replace("[timing]", "[timing]\nfoo = 3"));
    assert!(e.contains("foo"), "{e}");
    assert!(err("preset = \"nope\"\n").starts_with("preset: unknown preset"));
}

#[test]
fn bad_values_are_rejected_by_name() {
    let e = err("preset = \"tiny-slc\"\n[geometry]\nblocks_per_plane = -4\n");
    assert!(e.starts_with("geometry.blocks_per_plane:"), "{e}");
    let e = err("preset = \"tiny-slc\"\n[geometry]\npage_size = \"big\"\n");
    assert!(e.starts_with("geometry.page_size: expected integer"), "{e}");
    let e = err("preset = \"tiny-slc\"\n[geometry]\npage_size = 1001\n");
    assert!(
        e.starts_with("geometry.page_size:") && e.contains("subpages"),
        "{e}"
    );
    let e = err("preset = \"tiny-slc\"\n[geometry]\npages_per_block = 0\n");
    assert!(e.starts_with("geometry.pages_per_block:"), "{e}");
    let e = err("preset = \"tiny-slc\"\n[reliability]\nfactory_bad_rate = 1.5\n");
    assert!(e.starts_with("reliability.factory_bad_rate:"), "{e}");
    let e = err("preset = \"tiny-slc\"\nlayout = \"dist3\"\n");
    assert!(e.starts_with("layout:"), "{e}");
    let e = err("preset = \"tiny-slc\"\ncell = \"qlc\"\n");
    assert!(e.starts_with("cell:"), "{e}");
    let e = err("preset = \"tiny-mlc\"\n[geometry]\npages_per_block = 15\n");
    assert!(e.starts_with("geometry.pages_per_block:"), "{e}");
    let e = err("preset = \"tiny-slc\"\n[timing]\nerase_ns = 0\n");
    assert!(e.starts_with("timing.erase_ns:"), "{e}");
}

#[test]
fn missing_fields_without_a_preset_are_named() {
    let full = ChipConfig::preset("tiny-slc").unwrap().to_toml_string();
    let e = err(&full.replace("erase_ns = 1500000\n", ""));
    assert!(e.starts_with("timing.erase_ns: missing field"), "{e}");
}

#[test]
fn syntax_errors_give_line_and_column() {
    let e = err("preset = \"tiny-slc\"\nseed = [1\n");
    assert!(
        e.starts_with("line 3, column 1:") || e.starts_with("line 2"),
        "{e}"
    );
}
