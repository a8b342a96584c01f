//! The file image survives a restart byte for byte, and refuses truncated or corrupted
//! images with a clear error.

mod common;
use common::image::{cfg, exercise, snapshot};
use nand::backend::FileStorage;
use nand::{Chip, StorageError};
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;

#[test]
fn image_survives_restart_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chip.img");
    let mut c = Chip::new(cfg(), FileStorage::create(&path, &cfg()).unwrap()).unwrap();
    exercise(&mut c);
    let before = snapshot(&mut c);
    drop(c);
    let (storage, config) = FileStorage::open(&path).unwrap();
    assert_eq!(config, cfg());
    let mut c = Chip::new(config, storage).unwrap();
    let after = snapshot(&mut c);
    // Read counters moved on by the first snapshot's reads; compare everything else.
    let strip = |v: &[String]| -> Vec<String> {
        v.iter()
            .map(|l| l.split(", reads").next().unwrap().to_string())
            .collect()
    };
    assert_eq!(strip(&before), strip(&after));
    // The same workload on a RAM chip gives the same chip.
    let mut r = Chip::ram(cfg()).unwrap();
    exercise(&mut r);
    assert_eq!(strip(&snapshot(&mut r)), strip(&before));
}

#[test]
fn second_opener_is_refused_while_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chip.img");
    let _c = Chip::new(cfg(), FileStorage::create(&path, &cfg()).unwrap()).unwrap();
    assert!(matches!(
        FileStorage::open(&path),
        Err(StorageError::Locked(_))
    ));
}

fn fresh_image(path: &Path) {
    let mut c = Chip::new(cfg(), FileStorage::create(path, &cfg()).unwrap()).unwrap();
    exercise(&mut c);
}

fn poke(path: &Path, offset: u64, byte: u8) {
    let f = OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&[byte], offset).unwrap();
}

#[test]
fn truncated_image_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chip.img");
    fresh_image(&path);
    let len = std::fs::metadata(&path).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 1)
        .unwrap();
    let err = FileStorage::open(&path).unwrap_err();
    assert_eq!(
        err,
        StorageError::Size {
            found: len - 1,
            expected: len
        }
    );
    assert!(err.to_string().contains("truncated"));
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(100)
        .unwrap();
    assert!(matches!(
        FileStorage::open(&path),
        Err(StorageError::Size { .. })
    ));
}

#[test]
fn corrupted_header_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chip.img");
    fresh_image(&path);
    poke(&path, 0, b'X');
    assert!(
        matches!(FileStorage::open(&path), Err(StorageError::BadHeader(m)) if m.contains("magic"))
    );
    fresh_image(&path);
    poke(&path, 16, 9); // version
    assert_eq!(
        FileStorage::open(&path).unwrap_err(),
        StorageError::Version {
            found: 9,
            supported: 2
        }
    );
    fresh_image(&path);
    poke(&path, 40, b'#'); // inside the stored config
    assert!(
        matches!(FileStorage::open(&path), Err(StorageError::BadHeader(m)) if m.contains("checksum"))
    );
}

#[test]
fn corrupted_state_records_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chip.img");
    fresh_image(&path);
    // Block records start at 8 KiB, 32 bytes each. Block 1 has state (factory-bad or used).
    poke(&path, 8192 + 32 * 2 + 4, 0x77);
    let (s, conf) = FileStorage::open(&path).unwrap();
    let err = Chip::new(conf, s).unwrap_err();
    assert!(err.to_string().contains("block record 2"), "{err}");
    // Page records follow the block records.
    fresh_image(&path);
    let blocks = cfg().geometry.total_blocks() as u64;
    let pages_off = 8192 + 32 * blocks;
    // Find a non-empty page record and damage it.
    let f = OpenOptions::new().read(true).open(&path).unwrap();
    let mut rec = [0u8; 24];
    let mut idx = 0;
    loop {
        f.read_exact_at(&mut rec, pages_off + idx * 24).unwrap();
        if rec.iter().any(|&b| b != 0) {
            break;
        }
        idx += 1;
    }
    poke(&path, pages_off + idx * 24 + 3, rec[3] ^ 0x10);
    let (s, conf) = FileStorage::open(&path).unwrap();
    let err = Chip::new(conf, s).unwrap_err();
    assert!(
        err.to_string().contains(&format!("page record {idx}")),
        "{err}"
    );
}

#[test]
fn non_image_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junk.img");
    std::fs::write(&path, vec![0u8; 20000]).unwrap();
    assert!(matches!(
        FileStorage::open(&path),
        Err(StorageError::BadHeader(_))
    ));
    assert!(matches!(
        FileStorage::open(&dir.path().join("missing.img")),
        Err(StorageError::Io(_))
    ));
}

/// The image keeps the simulated clock (and the wall time it was saved at); a damaged clock
/// record is ignored, not fatal; a format-1 image (no clock slot) is still read.
#[test]
fn the_clock_record_persists() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chip.img");
    {
        let mut c = Chip::new(cfg(), FileStorage::create(&path, &cfg()).unwrap()).unwrap();
        assert_eq!(c.storage().clock(), None);
        c.storage_mut()
            .save_clock(86_400_000_000_000, 1_700_000_000)
            .unwrap();
    }
    let (s, _) = FileStorage::open(&path).unwrap();
    assert_eq!(s.clock(), Some((86_400_000_000_000, 1_700_000_000)));
    drop(s);
    poke(&path, 8160 + 5, 0x77);
    let (s, _) = FileStorage::open(&path).unwrap();
    assert_eq!(s.clock(), None);
    drop(s);
    // Format 1: version 1, CRC over the whole header before it, no clock slot.
    fresh_image(&path);
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let mut header = vec![0u8; 8192];
    f.read_exact_at(&mut header, 0).unwrap();
    header[16..20].copy_from_slice(&1u32.to_le_bytes());
    header[8160..8188].fill(0);
    let crc = crc32fast::hash(&header[..8188]);
    header[8188..].copy_from_slice(&crc.to_le_bytes());
    f.write_all_at(&header, 0).unwrap();
    drop(f);
    let (mut s, _) = FileStorage::open(&path).unwrap();
    assert_eq!(s.clock(), None);
    s.save_clock(5, 6).unwrap();
    drop(s);
    let (s, _) = FileStorage::open(&path).unwrap();
    assert_eq!(s.clock(), None, "a format-1 image has no clock slot");
}
