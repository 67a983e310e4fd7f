//! The compile-time contract (docs/architecture.md, CF1–CF21): every
//! `compile-fail/<topic>/cf*_fail_*.rs` must fail to compile with its `.stderr`, and
//! every `cf*_pass_*.rs` twin must compile and run. `TRYBUILD=overwrite cargo test
//! --test compile_fail` regenerates the snapshots; review the diff.

#[test]
fn the_compile_time_contract() {
    let t = trybuild::TestCases::new();
    t.compile_fail("compile-fail/*/cf*_fail_*.rs");
    t.pass("compile-fail/*/cf*_pass_*.rs");
}
