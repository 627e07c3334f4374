//! The tool-name rule has two homes that cannot share code: the macros check
//! names known at compile time, the registry every name at boot. Both are held
//! to one table of cases, `macros/src/tool_name_cases.rs`: the macro crate's
//! unit test reads it for its copy (a proc-macro crate exports nothing but its
//! macros, so no other crate can call that copy), and this test reads it for
//! the registry's, through its public surface.

const CASES: &[(&str, Option<&str>)] = &include!("../../macros/src/tool_name_cases.rs");

#[test]
fn registry_name_rule_follows_the_shared_table() {
    for &(name, problem) in CASES {
        assert_eq!(
            toolgate::registry::tool_name_problem(name),
            problem,
            "{name:?}"
        );
    }
}

#[test]
fn the_table_covers_every_outcome() {
    let outcomes: std::collections::BTreeSet<_> =
        CASES.iter().map(|&(_, problem)| problem).collect();
    assert_eq!(
        outcomes.len(),
        4,
        "usable, empty, too long, and characters: {outcomes:?}"
    );
}
