use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = epsilab::cli::Cli::parse();
    match epsilab::cli::execute(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
