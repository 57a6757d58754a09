//! The `rocqa` binary: everything lives in the library; this only hands over the args
//! and picks the allocator.

// Indexing allocates per syntax node and per token; mimalloc's thread-local free
// lists cost far less there than glibc's malloc (benches/index_vs_ctags.sh).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // tree-sitter's C core allocates through its own hooks; route them to the same
    // allocator. Set before the first parser exists, as the hooks require.
    unsafe {
        tree_sitter::set_allocator(
            Some(libmimalloc_sys::mi_malloc),
            Some(libmimalloc_sys::mi_calloc),
            Some(libmimalloc_sys::mi_realloc),
            Some(libmimalloc_sys::mi_free),
        );
    }
    std::process::exit(rocqa::cli::main_with_args(std::env::args_os()));
}
