//! The file image survives a restart byte for byte, and refuses truncated or corrupted
//! images with a clear error.

mod common;
use common::*;
use nand::backend::FileStorage;
use nand::{Chip, ChipConfig, CutMode, Nanos, Storage, StorageError};
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;

fn cfg() -> ChipConfig {
    let mut c = config("tiny-mlc");
    c.seed = 42;
    c.reliability.factory_bad_rate = 0.1;
    c
}

/// A full dump of everything observable about a chip.
fn snapshot<S: Storage>(c: &mut Chip<S>) -> Vec<String> {
    let g = *c.geometry();
    let mut out = Vec::new();
    for b in 0..g.total_blocks() {
        let ba = g.block_at(b).unwrap();
        out.push(format!("{ba}: {:?}", c.block_info(ba).unwrap()));
        if c.block_status(ba).unwrap() == nand::BlockStatus::FactoryBad {
            continue;
        }
        for p in 0..g.pages_per_block {
            let pa = ba.page(p).unwrap();
            let st = c.page_state(pa).unwrap();
            out.push(format!("{pa}: {st:?}"));
            if !st.erased {
                let mut d = vec![0; g.page_size as usize];
                let mut s = vec![0; g.spare_size as usize];
                // Peek without counting: read then compare the state separately.
                c.read(Nanos::ZERO, pa, &mut d, &mut s).unwrap();
                out.push(format!("{:x?}", crc32fast::hash(&[d, s].concat())));
            }
        }
    }
    out
}

/// Does a mixed workload on a chip: programs, erases, an SLC-mode block, a torn page, a
/// grown-bad block.
fn exercise<S: Storage>(c: &mut Chip<S>) {
    let good: Vec<u32> = (0..c.geometry().total_blocks())
        .filter(|&b| {
            c.block_status(c.geometry().block_at(b).unwrap()).unwrap() == nand::BlockStatus::Good
        })
        .collect();
    let t = Nanos::from_secs(5);
    for (i, &b) in good.iter().take(6).enumerate() {
        let ba = c.geometry().block_at(b).unwrap();
        if i == 3 {
            c.set_slc_mode(ba, true).unwrap();
        }
        for p in 0..(i as u32 * 2 + 1) {
            if i == 3 && c.pairing().kind(p) != nand::BitKind::Lsb {
                continue;
            }
            let (d, s) = buffers(c, (b * 100 + p) as u64);
            c.program(t, ba.page(p).unwrap(), &d, &s).unwrap();
        }
        if i == 1 {
            c.erase(t, ba).unwrap();
        }
    }
    let torn = c.geometry().block_at(good[6]).unwrap();
    let (d, s) = buffers(c, 7);
    c.arm_cut(1, CutMode::TornProgram(nand::TornFill::Random));
    assert!(c.program(t, torn.page(0).unwrap(), &d, &s).is_err());
    c.power_on();
    c.mark_bad(c.geometry().block_at(good[7]).unwrap()).unwrap();
}

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

/// Runs only as the child of `image_survives_sigkill`: writes, then SIGKILLs itself.
#[test]
fn sigkill_child_writer() {
    let Ok(path) = std::env::var("NAND_CHILD_IMAGE") else {
        return;
    };
    let mut c = Chip::new(
        cfg(),
        FileStorage::create(Path::new(&path), &cfg()).unwrap(),
    )
    .unwrap();
    exercise(&mut c);
    let me = std::process::id().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-9", &me])
        .status();
    loop {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn image_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chip.img");
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "sigkill_child_writer",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("NAND_CHILD_IMAGE", &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9), "child was not killed: {status:?}");
    let (storage, config) = FileStorage::open(&path).unwrap();
    let mut c = Chip::new(config, storage).unwrap();
    let mut r = Chip::ram(cfg()).unwrap();
    exercise(&mut r);
    assert_eq!(snapshot(&mut c), snapshot(&mut r));
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
            supported: 1
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
