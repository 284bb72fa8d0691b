//! Running a peer script beside a bench (`#[path = "common/peer.rs"] mod peer;`): the peer's
//! stdout echoed to stderr, its `key value` lines read back, and one `SKIP` line when it cannot
//! run (no python3, a missing package, `EPSILAB_BENCH_NO_PEER` set).

/// Runs `python3 script`; its stdout, or `None` with the reason printed.
#[allow(dead_code)] // Not every bench that includes this file calls both.
pub fn run(script: &str) -> Option<String> {
    run_with::<&str>(script, &[])
}

/// Runs `python3 script args...` unless `EPSILAB_BENCH_NO_PEER` is set; its stdout, or `None`
/// with the reason printed as `SKIP peer <script>: ...`.
pub fn run_with<S: AsRef<std::ffi::OsStr>>(script: &str, args: &[S]) -> Option<String> {
    if std::env::var_os("EPSILAB_BENCH_NO_PEER").is_some() {
        println!("SKIP peer {script}: EPSILAB_BENCH_NO_PEER is set");
        return None;
    }
    match std::process::Command::new("python3")
        .arg(script)
        .args(args)
        .output()
    {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            eprint!("{text}");
            Some(text)
        }
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            println!("SKIP peer {script}: it failed: {}", err.trim());
            None
        }
        Err(e) => {
            println!("SKIP peer {script}: cannot run python3: {e}");
            None
        }
    }
}

/// The number on the peer's line `key value`.
#[allow(dead_code)] // Not every bench that includes this file reads `key value` lines.
pub fn value(text: &str, key: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse::<f64>().ok())
}
