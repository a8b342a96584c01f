//! Restart from a file image: a `nandlab volume stress` process is killed with SIGKILL at
//! arbitrary moments; the next mount recovers and every page reads back as the durability
//! contract allows (what was flushed, or something written since).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

fn nandlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nandlab"))
}

fn kill_and_verify(dir: &std::path::Path, delay_ms: u64, recovery: &str, seed: u64) -> usize {
    let image = dir.join(format!("vol-{delay_ms}-{recovery}.img"));
    let st = nandlab()
        .args(["volume", "format", "--image"])
        .arg(&image)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let mut child = nandlab()
        .args([
            "volume",
            "stress",
            "--ops",
            "400000",
            "--seed",
            &seed.to_string(),
        ])
        .args(["--recovery", recovery, "--image"])
        .arg(&image)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    std::thread::sleep(Duration::from_millis(delay_ms));
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(9),
        "the writer finished before the kill: {status:?}"
    );
    let lines = reader.join().unwrap();
    let flushed = lines
        .iter()
        .rev()
        .find_map(|l| {
            l.strip_prefix("flushed ")
                .and_then(|n| n.parse::<usize>().ok())
        })
        .unwrap_or(0);
    let out = nandlab()
        .args([
            "volume",
            "verify",
            "--ops",
            "400000",
            "--seed",
            &seed.to_string(),
        ])
        .args([
            "--recovery",
            recovery,
            "--flushed",
            &flushed.to_string(),
            "--image",
        ])
        .arg(&image)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "killed after {delay_ms} ms ({flushed} operations flushed): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    flushed
}

#[test]
fn sigkill_at_any_moment_then_mount_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let mut progress = Vec::new();
    for (i, delay) in [40u64, 90, 170, 260, 400].into_iter().enumerate() {
        let recovery = if i % 2 == 0 {
            "roll-forward"
        } else {
            "full-scan"
        };
        progress.push(kill_and_verify(dir.path(), delay, recovery, 10 + i as u64));
    }
    // The kills landed at different points of the workload, past its first flushes.
    assert!(
        progress.iter().filter(|&&f| f > 0).count() >= 3,
        "{progress:?}"
    );
}
