//! A chip image survives its process being killed with SIGKILL. In its own test binary: the
//! child is this binary re-executed, and a fork from a binary whose other tests hold image
//! locks could briefly inherit them.

mod common;
use common::image::{cfg, exercise, snapshot};
use nand::backend::FileStorage;
use nand::Chip;
use std::path::Path;

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
