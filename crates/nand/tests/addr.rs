//! Address packing round-trips and checked conversions.

use nand::{BlockAddr, ChipConfig, Geometry, Lpn, PhysAddr};
use proptest::prelude::*;

fn geometry() -> impl Strategy<Value = Geometry> {
    (1u32..5, 1u32..5, 1u32..5, 1u32..300, 1u32..300).prop_map(|(ch, die, pl, blk, pg)| Geometry {
        channels: ch,
        dies_per_channel: die,
        planes_per_die: pl,
        blocks_per_plane: blk,
        pages_per_block: pg,
        page_size: 4096,
        spare_size: 128,
        subpages_per_page: 1,
    })
}

proptest! {
    #[test]
    fn phys_addr_fields_round_trip(ch in 0u32..256, die in 0u32..256, pl in 0u32..16,
                                   blk in 0u32..(1 << 24), pg in 0u32..(1 << 16)) {
        let a = PhysAddr::new(ch, die, pl, blk, pg).unwrap();
        prop_assert_eq!((a.channel(), a.die(), a.plane(), a.block(), a.page()), (ch, die, pl, blk, pg));
        prop_assert_eq!(PhysAddr::from_raw(a.raw()).unwrap(), a);
        let b = a.block_addr();
        prop_assert_eq!((b.channel(), b.die(), b.plane(), b.block()), (ch, die, pl, blk));
        prop_assert_eq!(b.page(pg).unwrap(), a);
        prop_assert_eq!(BlockAddr::from_raw(b.raw()).unwrap(), b);
    }

    #[test]
    fn oversized_fields_are_rejected(pl in 16u32..1000, pg in (1u32 << 16)..u32::MAX) {
        prop_assert!(PhysAddr::new(0, 0, pl, 0, 0).is_err());
        prop_assert!(PhysAddr::new(0, 0, 0, 0, pg).is_err());
        prop_assert!(PhysAddr::new(256, 0, 0, 0, 0).is_err());
        prop_assert!(PhysAddr::new(0, 0, 0, 1 << 24, 0).is_err());
    }

    #[test]
    fn raw_values_with_stray_bits_are_rejected(raw in any::<u64>()) {
        let ok = raw >> 60 == 0;
        prop_assert_eq!(PhysAddr::from_raw(raw).is_ok(), ok);
        prop_assert_eq!(BlockAddr::from_raw(raw).is_ok(), ok && raw & 0xFFFF == 0);
    }

    #[test]
    fn flat_indices_round_trip(g in geometry(), seed in any::<u64>()) {
        let total = g.total_pages();
        let idx = seed % total;
        let addr = g.page_at(idx).unwrap();
        prop_assert!(g.contains(addr));
        prop_assert_eq!(g.page_index(addr), Some(idx));
        let b = (seed % g.total_blocks() as u64) as u32;
        let ba = g.block_at(b).unwrap();
        prop_assert_eq!(g.block_index(ba), Some(b));
        prop_assert_eq!(g.page_at(total), None);
        prop_assert_eq!(g.block_at(g.total_blocks()), None);
        // Outside the geometry: no index.
        let out = PhysAddr::new(g.channels, 0, 0, 0, 0).unwrap();
        prop_assert_eq!(g.page_index(out), None);
        let out = PhysAddr::new(0, 0, 0, 0, g.pages_per_block).unwrap();
        prop_assert_eq!(g.page_index(out), None);
    }

    #[test]
    fn lpn_is_checked(count in 1u64..1_000_000, lpn in any::<u64>()) {
        prop_assert_eq!(Lpn::checked(lpn, count).is_ok(), lpn < count);
    }

    #[test]
    fn serde_rejects_bad_raw_addresses(raw in any::<u64>()) {
        let text = format!("a = {}", raw as i64);
        #[derive(serde::Deserialize)]
        struct W { #[allow(dead_code)] a: PhysAddr }
        let parsed: Result<W, _> = toml::from_str(&text);
        prop_assert_eq!(parsed.is_ok(), (raw as i64) >= 0 && raw >> 60 == 0);
    }
}

#[test]
fn flat_block_order_is_channel_die_plane_block() {
    let g = ChipConfig::preset("micron-29f64g").unwrap().geometry; // 2 planes × 2048 blocks
    assert_eq!(g.block_at(0).unwrap(), BlockAddr::new(0, 0, 0, 0).unwrap());
    assert_eq!(
        g.block_at(2047).unwrap(),
        BlockAddr::new(0, 0, 0, 2047).unwrap()
    );
    assert_eq!(
        g.block_at(2048).unwrap(),
        BlockAddr::new(0, 0, 1, 0).unwrap()
    );
    assert_eq!(g.total_pages(), 4096 * 256);
    assert_eq!(g.capacity_bytes(), 8 << 30);
}
