//! The compile-fail and compile-pass suite: every rule, through the
//! derive and through hand-written impls, with its message pinned.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
