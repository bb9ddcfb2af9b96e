//! `flotilla`: the control plane's server binary. The wiring lives in `cli`.

mod cli;
mod components;
mod heap;
mod local_up;
mod process;

// The servers allocate and free many small JSON values per request: glibc's allocator took
// about a fifth of the scheduling loop's CPU (perf). With jemalloc the loop bench uses 10-15%
// less CPU and its p99 drops; mimalloc saved as much CPU but doubled the p99 (page purging).
// `--features system-allocator` keeps glibc's, which heap profilers such as heaptrack follow.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
