//! `flotillactl`: the operator CLI (join and unjoin member clusters). The wiring lives in
//! `cli`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
