//! Compile-fail tests: each safety promise of the SIMT track, and each "not supported in
//! device code" message, is checked by a program that must not compile, with its message.
//! Regenerate the expected messages with `TRYBUILD=overwrite cargo test --test compile_fail`.

#[test]
fn safety_promises_and_unsupported_code_fail_to_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
