//! Build script of latlab-sys: with the feature `ofi`, compiles the libfabric shim
//! (csrc/ofi_shim.c: real functions around libfabric's `static inline` calls) against
//! libfabric's headers, found through pkg-config (Debian: libfabric-dev, pkgconf). The
//! library itself is not linked: the shim loads it on first use (see its header).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // build scripts are compiled with the package's features as cfg
    #[cfg(feature = "ofi")]
    ofi();
}

#[cfg(feature = "ofi")]
fn ofi() {
    println!("cargo:rerun-if-changed=csrc/ofi_shim.c");
    let lib = match pkg_config::Config::new()
        .atleast_version("1.17")
        // headers only: no `-lfabric` (loaded with dlopen by the shim)
        .cargo_metadata(false)
        .probe("libfabric")
    {
        Ok(l) => l,
        Err(e) => panic!(
            "the feature `ofi` needs libfabric >= 1.17 and pkg-config (Debian: apt-get install libfabric-dev pkgconf, or `make deps-test`); build without it with --no-default-features --features mpi: {e}"
        ),
    };
    let mut b = cc::Build::new();
    b.file("csrc/ofi_shim.c").warnings(true);
    for p in &lib.include_paths {
        b.include(p);
    }
    b.compile("latlab_ofi_shim");
}
