// The tool-name rule's cases: a name, and the problem each implementation of
// the rule must report for it (`None`: the name is usable).
//
// The rule has two homes that cannot share code: `toolgate-macros` checks
// literal names at compile time (a proc-macro crate exports nothing but its
// macros, so `toolgate` cannot call it), and `toolgate::registry::
// tool_name_problem` checks every name at boot (a proc-macro crate cannot
// depend on the crate that re-exports it). Both test suites read this one
// table — `macros/src/valid.rs` with `include!`, and
// `ui-tests/tests/tool_names.rs` the same way — so the copies cannot drift
// apart in what they accept or in what they say.
[
    ("read_file", None),
    ("gh.create_issue", None),
    ("fetch-page", None),
    ("A", None),
    ("v2", None),
    ("_", None),
    ("...", None),
    // 64 characters: the longest usable name.
    ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", None),
    ("", Some("the name is empty")),
    // 65 characters.
    (
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        Some("the name is longer than 64 characters"),
    ),
    // 64 characters but 65 bytes: the limit counts bytes.
    (
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaé",
        Some("the name is longer than 64 characters"),
    ),
    ("read file", Some("the name may only hold ASCII letters, digits, `_`, `-` and `.`")),
    ("naïve", Some("the name may only hold ASCII letters, digits, `_`, `-` and `.`")),
    ("gh/create", Some("the name may only hold ASCII letters, digits, `_`, `-` and `.`")),
    ("gh:create", Some("the name may only hold ASCII letters, digits, `_`, `-` and `.`")),
    ("tab\there", Some("the name may only hold ASCII letters, digits, `_`, `-` and `.`")),
    ("read_file\n", Some("the name may only hold ASCII letters, digits, `_`, `-` and `.`")),
    ("delete\u{202e}elif", Some("the name may only hold ASCII letters, digits, `_`, `-` and `.`")),
    ("zero\u{200b}width", Some("the name may only hold ASCII letters, digits, `_`, `-` and `.`")),
]
