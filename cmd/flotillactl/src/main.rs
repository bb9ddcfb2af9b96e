//! `flotillactl`: the operator CLI (join and unjoin member clusters, reschedule, promote a
//! member's object, top clusters). The wiring lives in `cli`; `promote` and `top` hold those
//! commands, `kinds` the resource types as users type them.

mod cli;
mod kinds;
mod promote;
mod top;

fn main() -> std::process::ExitCode {
    cli::main()
}
