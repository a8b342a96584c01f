//! Records the git commit the binary is built from (`NANDLAB_GIT_COMMIT`, `unknown` outside
//! a checkout), for the provenance of every `results.json` a reproduction writes.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Rebuild when `p` changes — only for a path that exists: cargo reruns a build script
/// whose watched path is missing on every build.
fn watch(p: PathBuf) {
    if p.exists() {
        println!("cargo:rerun-if-changed={}", p.display());
    }
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=NANDLAB_GIT_COMMIT={commit}");
    // Rebuild when HEAD moves: the HEAD file (a checkout), the branch it names (a commit)
    // and packed-refs.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]).map(PathBuf::from) {
        watch(dir.join("HEAD"));
        let common = git(&["rev-parse", "--git-common-dir"])
            .map(PathBuf::from)
            .map(|p| match p.is_absolute() {
                true => p,
                false => std::env::current_dir().unwrap_or_default().join(p),
            })
            .unwrap_or_else(|| dir.clone());
        watch(common.join("packed-refs"));
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watch(common.join(branch));
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
