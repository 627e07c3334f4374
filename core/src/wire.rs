//! Wire names: the one rule for the name a model API or an MCP client calls
//! an offered tool by.
//!
//! A tool's local name — what the transcript, the digest and the decisions
//! keep — may hold dots (`notes.write_note`: a server and its tool). Model
//! APIs take only ASCII letters, digits, `_` and `-`, at most 64 characters,
//! and MCP clients put a prefix of their own before a server's tool names
//! (`mcp__toolgate__…`). So every tool of a catalogue also has a **wire
//! name**:
//!
//! - `[A-Za-z0-9_-]`, at most [`MAX_LEN`] (48) characters, leaving a client
//!   room for its prefix;
//! - its local name with each `.` written `__` (`notes__write_note`) when
//!   that fits and is no other tool's name — its wire name or its local
//!   name;
//! - otherwise that text cut short, `_` and twelve hex digits of the
//!   SHA-256 of the local name (`notes__write_note_3f1c…`). A name is
//!   hashed when it is too long, or when it would be taken twice; every
//!   name it would clash with is hashed too, so none keeps the plain form
//!   by coming first.
//!
//! The mapping is one-to-one across the whole catalogue (builtins and every
//! server's tools), whatever the allow-list of a run; it depends only on the
//! catalogue's local names, never on their order, so two processes with the
//! same catalogue give every tool the same wire name. Names no plain
//! substitution could tell apart — servers `a_b` and `a-b`, server `a` with
//! tool `b_x` and server `a_b` with tool `x` — are told apart by the hash. No
//! wire name is another tool's local name, so a name read back resolves to
//! one tool whichever of the two it is ([`crate::registry::Catalogue::resolve`]).
//!
//! A provided tool whose every form clashes even so — two different names
//! with one twelve-digit hash — is left out of the catalogue with
//! [`DropReason::WireNameTaken`](crate::registry::DropReason::WireNameTaken);
//! two builtins that would are refused when the registry is built.

use std::collections::HashMap;

use sha2::{Digest as _, Sha256};

/// The longest wire name.
pub const MAX_LEN: usize = 48;

/// Hex digits of the hash a hashed wire name ends with.
const HASH_DIGITS: usize = 12;

/// Whether `name` can be sent as a tool's name: 1 to [`MAX_LEN`] ASCII
/// letters, digits, `_` and `-`.
pub fn is_wire_name(name: &str) -> bool {
    (1..=MAX_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// The plain form: the local name with each `.` written `__`, and any other
/// byte outside the wire's alphabet as `_` (a registry's names hold none).
fn plain(local: &str) -> String {
    let mut out = String::with_capacity(local.len() + 4);
    for c in local.chars() {
        match c {
            '.' => out.push_str("__"),
            c if c.is_ascii_alphanumeric() || c == '_' || c == '-' => out.push(c),
            _ => out.push('_'),
        }
    }
    out
}

/// The hashed form: the plain form cut to leave room, `_`, and the first
/// twelve hex digits of the local name's SHA-256.
fn hashed(local: &str) -> String {
    use std::fmt::Write as _;
    let mut out = plain(local);
    out.truncate(MAX_LEN - 1 - HASH_DIGITS);
    out.push('_');
    for byte in &Sha256::digest(local.as_bytes())[..HASH_DIGITS / 2] {
        // Writing to a `String` cannot fail.
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// Whether any two of `locals` (builtins) could never be told apart: their
/// hashed forms are one, or one's hashed form is another's local name. The
/// registry refuses such builtins when it is built, so that [`assign`] never
/// has to leave a builtin out.
pub(crate) fn builtin_clash<'a>(locals: &[&'a str]) -> Option<(&'a str, &'a str)> {
    let mut forms: HashMap<String, &str> = HashMap::new();
    let mut seen = std::collections::HashSet::new();
    // A name given twice is the registry's other refusal, not a clash.
    for &local in locals.iter().filter(|&&local| seen.insert(local)) {
        let form = hashed(local);
        if let Some(&other) = forms.get(&form) {
            return Some((other, local));
        }
        forms.insert(form, local);
    }
    locals.iter().find_map(|&local| {
        forms
            .get(local)
            .filter(|&&other| other != local)
            .map(|&other| (other, local))
    })
}

/// The wire name of each of `locals` (unique local names), in their order;
/// `None` for a tool left out because no form of its name is free. A tool
/// for which `kept` is true (a builtin) is never the one left out.
pub(crate) fn assign(locals: &[&str], kept: &[bool]) -> Vec<Option<String>> {
    let count = locals.len();
    let by_local: HashMap<&str, usize> = locals.iter().enumerate().map(|(i, &l)| (l, i)).collect();
    let mut hash: Vec<bool> = locals.iter().map(|l| plain(l).len() > MAX_LEN).collect();
    let mut out = vec![false; count];
    loop {
        let wires: Vec<Option<String>> = (0..count)
            .map(|i| {
                (!out[i]).then(|| {
                    if hash[i] {
                        hashed(locals[i])
                    } else {
                        plain(locals[i])
                    }
                })
            })
            .collect();
        let mut holders: HashMap<&str, Vec<usize>> = HashMap::with_capacity(count);
        for (i, wire) in wires.iter().enumerate() {
            if let Some(wire) = wire {
                holders.entry(wire.as_str()).or_default().push(i);
            }
        }
        // Who must change: every holder of a name held twice, and a tool
        // whose wire name is another (kept) tool's local name.
        let mut clashing = vec![false; count];
        for holders in holders.values().filter(|h| h.len() > 1) {
            for &i in holders {
                clashing[i] = true;
            }
        }
        // A tool whose wire name is another's local name, and that other.
        let mut over_local: Vec<(usize, usize)> = Vec::new();
        for (i, wire) in wires.iter().enumerate() {
            if let Some(wire) = wire
                && let Some(&j) = by_local.get(wire.as_str())
                && j != i
                && !out[j]
            {
                clashing[i] = true;
                over_local.push((i, j));
            }
        }
        if !clashing.contains(&true) {
            return wires;
        }
        // A clashing name still plain is hashed; a clash between names
        // already hashed leaves out the provided ones.
        let mut moved = false;
        for (hash, &clashing) in hash.iter_mut().zip(&clashing) {
            if clashing && !*hash {
                *hash = true;
                moved = true;
            }
        }
        if moved {
            continue;
        }
        for &(i, j) in &over_local {
            let left = if kept[i] { j } else { i };
            out[left] = true;
            moved = true;
        }
        for i in (0..count).filter(|&i| clashing[i] && !kept[i]) {
            out[i] = true;
            moved = true;
        }
        if !moved {
            // Only builtins clash, which the registry's build refuses; were
            // they to, none of them is sent rather than two under one name.
            for i in (0..count).filter(|&i| clashing[i]) {
                out[i] = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::*;

    fn assigned(locals: &[&str]) -> Vec<Option<String>> {
        assign(locals, &vec![false; locals.len()])
    }

    #[test]
    fn a_plain_name_is_kept_and_a_dotted_one_written_with_two_underscores() {
        assert_eq!(
            assigned(&["search_notes", "notes.write_note"]),
            [
                Some("search_notes".to_owned()),
                Some("notes__write_note".to_owned())
            ]
        );
    }

    #[test]
    fn names_one_substitution_cannot_tell_apart_are_hashed_all_of_them() {
        // Server `a` with tool `_x`, server `a_` with tool `x`, and a
        // builtin spelled as their plain form.
        let locals = ["a._x", "a_.x", "a___x"];
        let wires = assigned(&locals);
        for (local, wire) in locals.iter().zip(&wires) {
            let wire = wire.as_deref().unwrap_or_default();
            assert!(wire.starts_with("a___x_"), "{local} → {wire}");
            assert_eq!(wire.len(), "a___x_".len() + HASH_DIGITS);
        }
        let distinct: HashSet<_> = wires.iter().collect();
        assert_eq!(distinct.len(), 3);
    }

    #[test]
    fn a_wire_name_that_is_another_tools_local_name_is_hashed() {
        // `x.y` would be `x__y`, the local name of a builtin whose own plain
        // form is itself: both would hold `x__y`, so both are hashed.
        let wires = assigned(&["x.y", "x__y"]);
        assert!(
            wires
                .iter()
                .all(|w| w.as_deref().is_some_and(|w| w != "x__y"))
        );
    }

    #[test]
    fn a_name_too_long_is_cut_and_hashed() {
        let long = format!("server.{}", "t".repeat(57));
        let wires = assigned(&[long.as_str()]);
        let wire = wires[0].as_deref().unwrap_or_default();
        assert_eq!(wire.len(), MAX_LEN);
        assert!(is_wire_name(wire));
        assert!(wire.starts_with("server__ttt"));
    }

    #[test]
    fn a_provided_name_over_a_builtins_hashed_form_is_left_out_not_the_builtin() {
        // A provided tool whose local name is the hashed form a builtin
        // takes once it clashes: the builtin keeps its name.
        let builtin_hashed = hashed("p.q");
        let locals = ["p.q", "p__q", builtin_hashed.as_str()];
        let wires = assign(&locals, &[true, true, false]);
        assert_eq!(wires[0].as_deref(), Some(builtin_hashed.as_str()));
        assert!(wires[1].is_some());
        assert_eq!(wires[2], None, "{wires:?}");
    }

    #[test]
    fn builtins_that_could_never_be_told_apart_are_found() {
        let form = hashed("p.q");
        assert_eq!(builtin_clash(&["p.q", &form]), Some(("p.q", form.as_str())));
        assert_eq!(builtin_clash(&["p.q", "p__q", "r"]), None);
    }

    /// Local names as a registry holds them, from a small alphabet so that
    /// many collide after mapping, some at the longest a name may be.
    fn local_name() -> impl Strategy<Value = String> {
        prop_oneof![
            "[ab_.-]{1,6}",
            "[ab]{1,3}[._-][ab_-]{1,3}",
            "[a-z]{1,3}\\.[a-z_]{40,60}",
            "[a-z_-]{60,64}",
            Just("a_b.x".to_owned()),
            Just("a-b.x".to_owned()),
            Just("a.b_x".to_owned()),
            Just("a_b_x".to_owned()),
            Just("a__b__x".to_owned()),
        ]
    }

    proptest! {
        /// Over generated catalogues: every tool has a wire name, within the
        /// wire's alphabet and length; no two share one; none is another
        /// tool's local name; and the names do not depend on the
        /// catalogue's order.
        #[test]
        fn the_mapping_is_one_to_one_within_the_limits_and_stable(
            locals in proptest::collection::hash_set(local_name(), 1..40),
            seed in any::<u64>(),
        ) {
            let locals: Vec<&str> = locals.iter().map(String::as_str).collect();
            let wires = assigned(&locals);
            let mut seen = HashSet::new();
            let by_local: HashSet<&str> = locals.iter().copied().collect();
            for (local, wire) in locals.iter().zip(&wires) {
                let wire = wire.as_deref();
                prop_assert!(wire.is_some(), "{local} left out");
                let wire = wire.unwrap_or_default();
                prop_assert!(is_wire_name(wire), "{local} → {wire}");
                prop_assert!(seen.insert(wire.to_owned()), "{wire} twice");
                prop_assert!(wire == *local || !by_local.contains(wire), "{local} → {wire}, another's name");
            }
            // Another order, the same names.
            let mut order: Vec<usize> = (0..locals.len()).collect();
            order.rotate_left(usize::try_from(seed % locals.len() as u64).unwrap_or(0));
            order.reverse();
            let again = assigned(&order.iter().map(|&i| locals[i]).collect::<Vec<_>>());
            for (&i, wire) in order.iter().zip(&again) {
                prop_assert_eq!(wire, &wires[i]);
            }
        }
    }
}
