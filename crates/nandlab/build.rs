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

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=NANDLAB_GIT_COMMIT={commit}");
    // Rebuild when HEAD moves: the HEAD file (a checkout), the branch it names (a commit)
    // and packed-refs.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]).map(PathBuf::from) {
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        println!(
            "cargo:rerun-if-changed={}",
            dir.join("packed-refs").display()
        );
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let common = git(&["rev-parse", "--git-common-dir"])
                .map(PathBuf::from)
                .map(|p| {
                    if p.is_absolute() {
                        p
                    } else {
                        std::env::current_dir().unwrap().join(p)
                    }
                })
                .unwrap_or(dir);
            println!("cargo:rerun-if-changed={}", common.join(branch).display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
