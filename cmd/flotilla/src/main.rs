//! `flotilla`: the control plane's server binary. The wiring lives in `cli`.

mod cli;
mod components;

// The servers allocate and free many small JSON values per request; glibc's allocator spent
// about a fifth of the scheduling loop's CPU (perf), mimalloc about 15% less CPU in total.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
