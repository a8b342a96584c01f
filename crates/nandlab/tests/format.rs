//! FORMAT.md matches the code: a committed image of each kernel (`tests/data/format/`) is
//! decoded here with the documented layouts — file header, block and page records, spare
//! layout, OOB records, checkpoint region pages, each kernel's snapshot or GXT — written
//! out from the document, not with the code that wrote them; then a copy of each is
//! mounted and verified by the current build.

mod common;

use common::nandlab;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/format")
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes(b[o..o + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// The chip image file (FORMAT.md §1): geometry and the page images.
struct Image {
    bytes: Vec<u8>,
    blocks: usize,
    pages_per_block: usize,
    page: usize,
    spare: usize,
    subpages: usize,
    blocks_off: usize,
    pages_off: usize,
    data_off: usize,
}

impl Image {
    fn open(path: &Path) -> Image {
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(&bytes[..16], b"NANDLAB\x1aIMAGE\0\0\0", "magic");
        assert_eq!(u32_at(&bytes, 16), 2, "image format version");
        let len = u32_at(&bytes, 20) as usize;
        assert_eq!(u64_at(&bytes, 24), bytes.len() as u64, "image size");
        assert_eq!(
            crc32fast::hash(&bytes[..8160]),
            u32_at(&bytes, 8188),
            "header CRC32"
        );
        // The clock record: all zero until a volume saves its clock (`serve`).
        if bytes[8160..8184].iter().any(|&b| b != 0) {
            assert_eq!(&bytes[8160..8164], b"CLK1", "clock record");
            assert_eq!(
                crc32fast::hash(&bytes[8160..8180]),
                u32_at(&bytes, 8180),
                "clock record CRC32"
            );
        }
        let cfg: toml::Table = std::str::from_utf8(&bytes[32..32 + len])
            .unwrap()
            .parse()
            .unwrap();
        let g = cfg["geometry"].as_table().unwrap();
        let n = |k: &str| g[k].as_integer().unwrap() as usize;
        let blocks =
            n("channels") * n("dies_per_channel") * n("planes_per_die") * n("blocks_per_plane");
        let (ppb, page, spare) = (n("pages_per_block"), n("page_size"), n("spare_size"));
        let blocks_off = 8192;
        let pages_off = blocks_off + 32 * blocks;
        let data_off = (pages_off + 24 * blocks * ppb).next_multiple_of(4096);
        assert_eq!(data_off + blocks * ppb * (page + spare), bytes.len());
        Image {
            bytes,
            blocks,
            pages_per_block: ppb,
            page,
            spare,
            subpages: n("subpages_per_page"),
            blocks_off,
            pages_off,
            data_off,
        }
    }

    fn pages(&self) -> usize {
        self.blocks * self.pages_per_block
    }

    /// A block record: (erase count, flags), its CRC32 checked.
    fn block_record(&self, b: usize) -> (u32, u8) {
        let r = &self.bytes[self.blocks_off + 32 * b..][..32];
        if r.iter().all(|&x| x == 0) {
            return (0, 0);
        }
        assert_eq!(
            crc32fast::hash(&r[..28]),
            u32_at(r, 28),
            "block {b} record CRC32"
        );
        (u32_at(r, 0), r[8])
    }

    /// A page record's CRC32 checked; whether the page was programmed.
    fn programmed(&self, p: usize) -> bool {
        let r = &self.bytes[self.pages_off + 24 * p..][..24];
        if r.iter().all(|&x| x == 0) {
            return false;
        }
        assert_eq!(
            crc32fast::hash(&r[..20]),
            u32_at(r, 20),
            "page {p} record CRC32"
        );
        r[12] > 0
    }

    fn data(&self, p: usize) -> &[u8] {
        &self.bytes[self.data_off + p * (self.page + self.spare)..][..self.page]
    }

    fn spare(&self, p: usize) -> &[u8] {
        &self.bytes[self.data_off + p * (self.page + self.spare) + self.page..][..self.spare]
    }
}

/// An OOB record (FORMAT.md §2).
#[derive(Debug, Clone, Copy)]
struct Record {
    lpn: u64,
    seq: u64,
    kind: u8,
    t: u8,
    crc: u32,
}

/// The strength header and the OOB record of a whole-page layout: `None` for an erased
/// spare area. Checks the header's three copies, the layout version and the record check.
fn record(spare: &[u8]) -> Option<(Record, u8)> {
    if spare.iter().all(|&b| b == 0xFF) {
        return None;
    }
    assert!(
        spare[0] == spare[1] && spare[1] == spare[2],
        "strength header"
    );
    let version = spare[3];
    assert!(version == 1 || version == 2, "layout version {version}");
    let r = &spare[4..28];
    let mut other = r[..18].to_vec();
    other.extend_from_slice(&r[20..24]);
    assert_eq!(
        (crc32c::crc32c(&other) & 0xFFFF) as u16,
        u16_at(r, 18),
        "record check"
    );
    let rec = Record {
        lpn: u64_at(r, 0),
        seq: u64_at(r, 8),
        kind: r[16],
        t: r[17],
        crc: u32_at(r, 20),
    };
    assert_eq!(rec.t, spare[0], "the record names the header's strength");
    Some((rec, version))
}

/// Metadata kind byte of tag `tag` (FORMAT.md §2).
fn meta(tag: u8) -> u8 {
    2 | tag << 2
}

/// The programmed whole-layout pages: page → (record, layout version), every data CRC32C
/// checked.
fn records(img: &Image, skip_block: impl Fn(usize) -> bool) -> BTreeMap<usize, (Record, u8)> {
    let mut out = BTreeMap::new();
    for p in 0..img.pages() {
        if skip_block(p / img.pages_per_block) || !img.programmed(p) {
            continue;
        }
        if let Some((rec, v)) = record(img.spare(p)) {
            assert_eq!(
                crc32c::crc32c(img.data(p)),
                rec.crc,
                "page {p}: data CRC32C"
            );
            out.insert(p, (rec, v));
        }
    }
    out
}

/// The newest complete generation of the checkpoint region (FORMAT.md §3): its body.
fn newest_generation(img: &Image, recs: &BTreeMap<usize, (Record, u8)>) -> Vec<u8> {
    // generation → index → payload
    let mut gens: BTreeMap<u64, (u32, BTreeMap<u32, Vec<u8>>)> = BTreeMap::new();
    for (&p, (rec, _)) in recs {
        if rec.kind != meta(1) {
            continue;
        }
        let d = img.data(p);
        assert_eq!(&d[..4], b"NLCP", "region page magic");
        assert_eq!(d[4], 1, "region page version");
        let kind = d[5];
        assert!(kind <= 2);
        assert_eq!(&d[6..8], &[0, 0]);
        let (gen, index, body_pages, len) =
            (u64_at(d, 8), u32_at(d, 16), u32_at(d, 20), u32_at(d, 24));
        assert_eq!(
            (rec.lpn, rec.seq),
            (gen, index as u64),
            "the record names the page"
        );
        if kind == 0 {
            let e = gens.entry(gen).or_default();
            e.0 = body_pages;
            e.1.insert(index, d[32..32 + len as usize].to_vec());
        }
    }
    let (gen, (n, body)) = gens
        .into_iter()
        .rev()
        .find(|(_, (n, b))| (0..*n).all(|i| b.contains_key(&i)))
        .expect("a complete generation");
    assert!(gen > 0 && n > 0);
    body.into_values().collect::<Vec<_>>().concat()
}

/// The page kernel's snapshot (FORMAT.md §4), checked against the data pages' records.
fn check_page_snapshot(img: &Image, recs: &BTreeMap<usize, (Record, u8)>, dies: usize) {
    let s = newest_generation(img, recs);
    let n = s.len() - 4;
    assert_eq!(crc32c::crc32c(&s[..n]), u32_at(&s, n), "snapshot CRC32C");
    let seq = u64_at(&s, 0);
    let logical = u64_at(&s, 8) & ((1 << 48) - 1);
    assert_eq!(s[14], 0, "flags: the map in RAM");
    assert_eq!(s[15], 1, "snapshot format version");
    assert_eq!(u32_at(&s, 16) as usize, dies);
    assert_eq!(u32_at(&s, 20) as usize, img.blocks);
    let states = 24 + 16 * dies;
    for b in 0..img.blocks {
        assert!(s[states + b] & !0x40 <= 5, "block state");
    }
    let erase = states + img.blocks;
    for b in 0..img.blocks {
        // (As of the checkpoint: region blocks may have been erased since.)
        assert!(
            u32_at(&s, erase + 4 * b) <= img.block_record(b).0,
            "erase count of {b}"
        );
    }
    let map = erase + 4 * img.blocks;
    let mut mapped = 0;
    for l in 0..logical as usize {
        let p = u32_at(&s, map + 4 * l);
        if p >= u32::MAX - 1 {
            continue;
        }
        mapped += 1;
        // A page the checkpoint maps holds that logical page, written before it.
        let (rec, _) = recs[&(p as usize)];
        assert!(rec.kind & 3 <= 1, "a data page");
        assert_eq!(rec.lpn, l as u64);
        assert!(rec.seq < seq);
    }
    assert!(mapped > 0, "the checkpoint maps pages");
    let crit = map + 4 * logical as usize;
    assert!(u32_at(&s, crit) <= 1, "critical-page encoding");
}

/// The block kernel's snapshot (FORMAT.md §5).
fn check_block_snapshot(img: &Image, recs: &BTreeMap<usize, (Record, u8)>) {
    let s = newest_generation(img, recs);
    let n = s.len() - 4;
    assert_eq!(crc32c::crc32c(&s[..n]), u32_at(&s, n), "snapshot CRC32C");
    assert_eq!(&s[..4], b"BKCP");
    assert_eq!(s[4], 1, "snapshot format version");
    assert_eq!(s[5], 1, "written by a clean shutdown");
    assert_eq!(u32_at(&s, 12) as usize, img.blocks);
    let lbns = u32_at(&s, 8);
    for b in 0..img.blocks {
        let o = 24 + 11 * b;
        assert!(s[o] & 0x7F <= 4, "role");
        let lbn = u32_at(&s, o + 1);
        assert!(lbn < lbns || lbn == u32::MAX);
        assert!(u16_at(&s, o + 5) as usize <= img.pages_per_block);
        assert!(
            u32_at(&s, o + 7) <= img.block_record(b).0,
            "erase count of {b}"
        );
    }
    let torn = 24 + 11 * img.blocks;
    assert_eq!(torn + 4 + 4 * u32_at(&s, torn) as usize, n);
}

/// A copy of an image and its FTL file mounts and verifies every page the stress run
/// wrote (seed 1, 64 operations, all flushed).
fn mounts_and_verifies(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join(format!("{name}.img"));
    std::fs::copy(data_dir().join(format!("{name}.img")), &img).unwrap();
    std::fs::copy(
        data_dir().join(format!("{name}.img.ftl.toml")),
        dir.path().join(format!("{name}.img.ftl.toml")),
    )
    .unwrap();
    let o = nandlab(&[
        "volume",
        "verify",
        "--image",
        img.to_str().unwrap(),
        "--flushed",
        "64",
    ]);
    assert!(
        o.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn page_kernel_image() {
    let img = Image::open(&data_dir().join("page.img"));
    let recs = records(&img, |_| false);
    assert!(
        recs.values().all(|(_, v)| *v == 1),
        "no PPROF without FLARES"
    );
    check_page_snapshot(&img, &recs, 1);
    mounts_and_verifies("page");
}

#[test]
fn combined_profile_image() {
    let img = Image::open(&data_dir().join("combined.img"));
    let recs = records(&img, |_| false);
    // FLARES's PPROF codeword on every page (layout version 2), its reserved bits zero
    // and its strength the header's.
    for &p in recs.keys() {
        let spare = img.spare(p);
        assert_eq!(spare[3], 2, "page {p}: layout with PPROF");
        let v = u64_at(spare, 32);
        assert_eq!(v >> 58, 0);
        assert_eq!((v & 0x3F) as u8, spare[0]);
    }
    check_page_snapshot(&img, &recs, 1);
    mounts_and_verifies("combined");
}

#[test]
fn block_kernel_image() {
    let img = Image::open(&data_dir().join("block.img"));
    let recs = records(&img, |_| false);
    check_block_snapshot(&img, &recs);
    mounts_and_verifies("block");
}

#[test]
fn gftl_image() {
    // No checkpoint: every programmed page carries a whole record.
    let img = Image::open(&data_dir().join("gftl.img"));
    let recs = records(&img, |_| false);
    assert!(recs.len() >= 16, "{} pages", recs.len());
    let kinds: std::collections::BTreeSet<u8> = recs.values().map(|(r, _)| r.kind).collect();
    assert!(kinds.iter().all(|k| k & 3 <= 1), "{kinds:?}");
    mounts_and_verifies("gftl");
}

#[test]
fn spftl_image() {
    let img = Image::open(&data_dir().join("spftl.img"));
    assert!(img.subpages > 1);
    // Metadata lives in SLC-mode SP blocks as subpage units (their own layout); the data
    // pages are whole pages with whole records.
    let slc = |b: usize| img.block_record(b).1 & 8 != 0;
    let recs = records(&img, slc);
    let kinds: std::collections::BTreeSet<u8> = recs.values().map(|(r, _)| r.kind).collect();
    // Data pages, and the kernel's whole-page padding and tombstones (tags 43, 44).
    assert!(
        kinds
            .iter()
            .all(|&k| k & 3 <= 1 || k == meta(43) || k == meta(44)),
        "{kinds:?}"
    );
    // A GXT unit: magic GXT1, then mode and a block width of 2 bytes on this chip.
    let unit = img.page / img.subpages;
    let mut gxts = 0;
    for p in 0..img.pages() {
        if !slc(p / img.pages_per_block) || !img.programmed(p) {
            continue;
        }
        for u in img.data(p).chunks(unit) {
            if &u[..4] == b"GXT1" {
                assert_eq!(u[5], 2, "block width");
                gxts += 1;
            }
        }
    }
    assert!(gxts > 0, "a GXT on the chip");
    mounts_and_verifies("spftl");
}
