//! Embeds the commit the binary is built from (`EPSILAB_BUILD_COMMIT`, with `-dirty` when the
//! code differs from it), so that provenance names the code that computed a result, not the
//! checkout that happens to be current when a long run ends.
//!
//! It also sets `cfg(epsilab_python3)` where `python3` runs: the tests that start standard-library
//! Python programs are `#[ignore]`d without it (the harness cannot ignore at run time), so the
//! README's `cargo test` passes on a machine without Python and names what it left out. The probe
//! reruns with the code, not with `PATH`: a rerun rebuilds the crate, and activating a virtual
//! environment should not.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).filter(|c| !c.is_empty());
    // Only the code counts: results and docs change without changing what the binary does.
    let dirty = git(&[
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        "src",
        "build.rs",
        "Cargo.toml",
        "Cargo.lock",
    ])
    .is_some_and(|s| !s.is_empty());
    let value = match commit {
        Some(c) if dirty => format!("{c}-dirty"),
        Some(c) => c,
        None => "unknown".into(),
    };
    println!("cargo:rustc-env=EPSILAB_BUILD_COMMIT={value}");
    // The code, and the commit: HEAD and the branch it names (a commit moves the branch, not
    // HEAD), never the index, which `git status` rewrites (each status cost a rebuild).
    let mut watched: Vec<String> = ["src", "build.rs", "Cargo.toml", "Cargo.lock"]
        .map(String::from)
        .to_vec();
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for name in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
        if let Some(path) = git(&["rev-parse", "--git-path", name])
            && std::path::Path::new(&path).exists()
        {
            watched.push(path);
        }
    }
    for path in watched {
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo::rustc-check-cfg=cfg(epsilab_python3)");
    let python = Command::new("python3").args(["-S", "-c", "pass"]).output();
    if python.is_ok_and(|o| o.status.success()) {
        println!("cargo:rustc-cfg=epsilab_python3");
    }
}
