//! The `rocqa` binary: everything lives in the library; this only hands over the args.

fn main() {
    std::process::exit(rocqa::cli::main_with_args(std::env::args_os()));
}
