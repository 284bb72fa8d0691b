//! Running a peer script beside a bench (`#[path = "common/peer.rs"] mod peer;`): the peer's
//! stdout echoed to stderr, its `key value` lines read back, and one message when it cannot run.

/// Runs `python3 script` unless `EPSILAB_BENCH_NO_PEER` is set; its stdout, or `None` with the
/// reason printed.
pub fn run(script: &str) -> Option<String> {
    if std::env::var_os("EPSILAB_BENCH_NO_PEER").is_some() {
        return None;
    }
    match std::process::Command::new("python3").arg(script).output() {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            eprint!("{text}");
            Some(text)
        }
        Ok(o) => {
            eprintln!(
                "numpy peer failed (needs python3 with numpy): {}",
                String::from_utf8_lossy(&o.stderr)
            );
            None
        }
        Err(e) => {
            eprintln!("numpy peer not run: python3: {e}");
            None
        }
    }
}

/// The number on the peer's line `key value`.
pub fn value(text: &str, key: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse::<f64>().ok())
}
