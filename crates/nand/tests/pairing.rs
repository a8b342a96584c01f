//! Pairing tables: equal LSB/MSB counts, symmetric pairing, and each layout matching its
//! definition, checked against independent formulations.

use nand::{BitKind, CellType, PairingLayout, PairingTable};
use proptest::prelude::*;

fn table(layout: PairingLayout, ppb: u32) -> PairingTable {
    PairingTable::new(layout, layout.cell_type(), ppb).unwrap()
}

fn check_common(t: &PairingTable) {
    let bits = t.layout().cell_type().bits_per_cell();
    let n = t.pages_per_block();
    // Equal number of pages of each kind the cell type has.
    let counts = t.kind_counts();
    let per_kind = n / bits;
    match bits {
        1 => assert_eq!(counts, [n, 0, 0]),
        2 => assert_eq!(counts, [per_kind, 0, per_kind]),
        _ => assert_eq!(counts, [per_kind; 3]),
    }
    for p in 0..n {
        let info = t.info(p);
        assert_eq!(info.partners().len() as u32, bits - 1, "page {p}");
        for &q in info.partners() {
            // Symmetric: q lists p, both on the same word line, different kinds.
            assert!(
                t.info(q).partners().contains(&p),
                "pairing not symmetric at {p}/{q}"
            );
            assert_eq!(t.info(q).wordline, info.wordline);
            assert_ne!(t.info(q).kind, info.kind);
        }
        // Each page is on the word line that lists it.
        assert!(t.wordline_pages(info.wordline).contains(&p));
        // Lower pages come first in program order: ascending programming never needs a
        // page after itself.
        for q in t.lower_pages(p) {
            assert!(q < p, "page {p} needs later page {q}");
        }
    }
    // Every page appears in exactly one word line.
    let mut seen = vec![false; n as usize];
    for wl in 0..t.wordline_count() {
        for &p in t.wordline_pages(wl) {
            assert!(!seen[p as usize]);
            seen[p as usize] = true;
        }
    }
    assert!(seen.iter().all(|&s| s));
}

#[test]
fn dist3_matches_its_definition() {
    for n in [4u32, 8, 16, 64, 128, 256, 512] {
        let t = table(PairingLayout::Dist3, n);
        check_common(&t);
        // Word line 0 = pages 0 and 2.
        assert_eq!(t.wordline_pages(0), &[0, 2]);
        // LSB 2k−1 pairs with MSB 2k+2 while 2k+2 < n − 1.
        let mut k = 1;
        while 2 * k + 2 < n - 1 {
            let lsb = 2 * k - 1;
            assert_eq!(t.kind(lsb), BitKind::Lsb, "n={n} k={k}");
            assert_eq!(t.info(lsb).partners(), &[2 * k + 2], "n={n} k={k}");
            assert_eq!(t.kind(2 * k + 2), BitKind::Msb);
            k += 1;
        }
        // The last word line pairs n−3 with n−1 (distance 2).
        assert_eq!(t.info(n - 3).partners(), &[n - 1], "n={n}");
        assert_eq!(t.kind(n - 1), BitKind::Msb);
    }
    // A small block written out in full.
    let t = table(PairingLayout::Dist3, 8);
    let wls: Vec<&[u32]> = (0..4).map(|w| t.wordline_pages(w)).collect();
    assert_eq!(wls, vec![&[0, 2][..], &[1, 4], &[3, 6], &[5, 7]]);
}

#[test]
fn mod2_is_alternating() {
    let t = table(PairingLayout::Mod2, 128);
    check_common(&t);
    for p in 0..128u32 {
        let expect = if p % 2 == 0 {
            BitKind::Lsb
        } else {
            BitKind::Msb
        };
        assert_eq!(t.kind(p), expect);
        assert_eq!(t.info(p).partners(), &[p ^ 1]);
        assert_eq!(t.info(p).wordline, p / 2);
    }
}

#[test]
fn mod3_tlc_triples() {
    let t = table(PairingLayout::Mod3, 192);
    check_common(&t);
    assert_eq!(t.wordline_pages(5), &[15, 16, 17]);
    assert_eq!(t.kind(16), BitKind::Csb);
    assert_eq!(t.lower_pages(17).collect::<Vec<_>>(), vec![15, 16]);
    assert_eq!(t.upper_pages(15).collect::<Vec<_>>(), vec![16, 17]);
}

#[test]
fn slc_has_no_partners() {
    let t = table(PairingLayout::Slc, 64);
    check_common(&t);
    assert!(t.info(10).partners().is_empty());
}

#[test]
fn layouts_must_fit_the_cell_type_and_block() {
    assert!(PairingTable::new(PairingLayout::Dist3, CellType::Slc, 64).is_err());
    assert!(PairingTable::new(PairingLayout::Mod2, CellType::Mlc, 63).is_err());
    assert!(PairingTable::new(PairingLayout::Mod3, CellType::Tlc, 64).is_err());
    assert!(PairingTable::new(PairingLayout::Dist3, CellType::Mlc, 2).is_err());
}

#[test]
fn every_preset_names_a_valid_layout() {
    for name in nand::PRESET_NAMES {
        let c = nand::ChipConfig::preset(name).unwrap();
        c.validate().unwrap();
        let t = PairingTable::new(c.layout, c.cell, c.geometry.pages_per_block).unwrap();
        check_common(&t);
    }
}

proptest! {
    #[test]
    fn mlc_layouts_hold_for_any_even_block(half in 2u32..600) {
        let n = half * 2;
        check_common(&table(PairingLayout::Dist3, n));
        check_common(&table(PairingLayout::Mod2, n));
    }
}
