//! The committed header (`include/cuprum_ffi.h`) is what cbindgen makes of `src/lib.rs` with
//! `cbindgen.toml`, so C and Go programs see the ABI the library has. Regenerate it with
//! `CUPRUM_BLESS=1 cargo test -p cuprum-ffi-example --test header`.

#[test]
fn the_committed_header_is_what_cbindgen_makes() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let config = match cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")) {
        Ok(c) => c,
        Err(e) => panic!("cbindgen.toml: {e}"),
    };
    let bindings = match cbindgen::Builder::new()
        .with_src(format!("{dir}/src/lib.rs"))
        .with_config(config)
        .generate()
    {
        Ok(b) => b,
        Err(e) => panic!("cbindgen could not read src/lib.rs: {e}"),
    };
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = String::from_utf8(generated).expect("cbindgen writes UTF-8");
    let path = format!("{dir}/include/cuprum_ffi.h");
    if std::env::var("CUPRUM_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &generated).expect("writes the header");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/cuprum_ffi.h is not what cbindgen makes of src/lib.rs: regenerate it with \
         CUPRUM_BLESS=1 cargo test -p cuprum-ffi-example --test header\n--- generated:\n{generated}"
    );
}
