//! `flotilla`: the control plane's server binary. The wiring lives in `cli`.

mod cli;
mod components;

fn main() -> std::process::ExitCode {
    cli::main()
}
