use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    open_standard_streams();
    let cli = epsilab::cli::Cli::parse();
    match epsilab::cli::execute(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(not(unix))]
fn open_standard_streams() {}

#[cfg(unix)]
/// Points closed standard streams (`2>&-`) at /dev/null. Otherwise the next file opened takes
/// their descriptor, and messages meant for stderr would land in (or fail on) a results file.
fn open_standard_streams() {
    use std::os::fd::AsRawFd;
    while let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        if f.as_raw_fd() > 2 {
            break;
        }
        // Keeps the descriptor 0, 1 or 2 open for the life of the process.
        std::mem::forget(f);
    }
}
