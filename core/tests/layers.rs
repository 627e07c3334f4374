//! The floor plan in `lib.rs` is true: every import between the crate's
//! modules points down its layers.
//!
//! The plan is read from `lib.rs`'s own docs (the table under "# Floor
//! plan"), so the documentation and this check cannot drift apart. Imports
//! are read from the source text: every `crate::…` path outside comments —
//! in `use` items, in paths written inline, and in serde attributes that name
//! a function (`deserialize_with = "crate::…"`) — counts. `$crate::` in a
//! macro and `super::` inside a module's own folder do not: the first is the
//! macro's caller's path, the second stays inside one module.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The one circle the plan allows, both ways.
const CIRCLE: (&str, &str) = ("tool", "gate");

/// The modules in the plan's order, each with its layer's number and its
/// place in the whole order.
fn floor_plan(lib: &str) -> Vec<(String, usize)> {
    let mut layers = Vec::new();
    let mut inside = false;
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.trim();
        if doc.starts_with("# ") {
            inside = doc == "# Floor plan";
            continue;
        }
        if !inside || !doc.starts_with('|') || doc.starts_with("|---") {
            continue;
        }
        let cells: Vec<&str> = doc.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() < 3 || cells[0] == "layer" {
            continue;
        }
        let layer = layers.len();
        let mut names = Vec::new();
        for part in cells[1].split(',') {
            let name = part.trim().trim_matches('`');
            assert!(
                !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "the floor plan's row {:?} names {part:?}, which is not a module",
                cells[0]
            );
            names.push((name.to_owned(), layer));
        }
        layers.push(names);
    }
    assert!(
        layers.len() > 3,
        "no floor plan found in lib.rs under \"# Floor plan\""
    );
    layers.into_iter().flatten().collect()
}

/// Every `.rs` file below `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file belongs to: the first part of its path below `src/`.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap_or(file);
    let first = relative
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    first.trim_end_matches(".rs").to_owned()
}

/// The text with its comments blanked out, string and character literals
/// kept (a `//` inside a string is no comment).
fn without_comments(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) == Some(&'"') {
                let closing: String = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let rest: String = chars[j + 1..].iter().collect();
                let end = rest
                    .find(&closing)
                    .map_or(rest.len(), |at| at + closing.len());
                out.extend(&chars[i..=j]);
                out.push_str(&rest[..end]);
                i = j + 1 + rest[..end].chars().count();
            } else {
                out.push(c);
                i += 1;
            }
        } else if c == '"' {
            out.push(c);
            i += 1;
            while i < chars.len() {
                out.push(chars[i]);
                if chars[i] == '\\' {
                    if let Some(&escaped) = chars.get(i + 1) {
                        out.push(escaped);
                    }
                    i += 2;
                    continue;
                }
                i += 1;
                if chars[i - 1] == '"' {
                    break;
                }
            }
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal ('"', '\''); a lifetime has no closing quote.
            let start = i;
            i += if next == Some('\\') { 2 } else { 1 };
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.extend(&chars[start..i.min(chars.len())]);
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The modules `text` imports: the first segment after each `crate::`. A
/// name in capitals is something the crate's root re-exports, and counts
/// as an import of `lib`.
fn imports(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    let mut before: Option<char> = None;
    while let Some(at) = rest.find("crate::") {
        let preceding = rest[..at].chars().next_back().or(before);
        let after = &rest[at + "crate::".len()..];
        before = Some(':');
        rest = after;
        if preceding.is_some_and(|c| is_ident(c) || c == '$') {
            continue;
        }
        if let Some(group) = after.strip_prefix('{') {
            let mut depth = 0usize;
            let mut item = String::new();
            let mut items = Vec::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        items.push(std::mem::take(&mut item));
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            items.push(item);
            for item in items {
                let name: String = item.trim().chars().take_while(|&c| is_ident(c)).collect();
                if !name.is_empty() {
                    found.push(name);
                }
            }
        } else {
            let name: String = after.chars().take_while(|&c| is_ident(c)).collect();
            if !name.is_empty() {
                found.push(name);
            }
        }
    }
    found
        .into_iter()
        .map(|name| {
            if name.starts_with(|c: char| c.is_ascii_uppercase()) {
                "lib".to_owned()
            } else {
                name
            }
        })
        .collect()
}

#[test]
fn every_import_points_down_the_floor_plan() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs is readable");
    let plan = floor_plan(&lib);
    let place: BTreeMap<&str, (usize, usize)> = plan
        .iter()
        .enumerate()
        .map(|(order, (name, layer))| (name.as_str(), (*layer, order)))
        .collect();
    assert_eq!(
        place.len(),
        plan.len(),
        "the floor plan names a module twice"
    );

    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut problems = String::new();
    let mut seen_modules = std::collections::BTreeSet::new();
    let mut edges = 0;
    for file in &files {
        let module = module_of(&src, file);
        seen_modules.insert(module.clone());
        let Some(&(layer, order)) = place.get(module.as_str()) else {
            let _ = writeln!(
                problems,
                "{}: module `{module}` has no place in lib.rs's floor plan",
                file.display()
            );
            continue;
        };
        let text = std::fs::read_to_string(file).expect("a source file is readable");
        for imported in imports(&without_comments(&text)) {
            if imported == module {
                continue;
            }
            edges += 1;
            let Some(&(their_layer, their_order)) = place.get(imported.as_str()) else {
                let _ = writeln!(
                    problems,
                    "{}: imports `crate::{imported}`, which has no place in the floor plan",
                    file.display()
                );
                continue;
            };
            let circle = (module.as_str(), imported.as_str()) == CIRCLE
                || (imported.as_str(), module.as_str()) == CIRCLE;
            if their_order > order && !circle {
                let _ = writeln!(
                    problems,
                    "{}: `{module}` (layer {layer}) imports `{imported}` (layer {their_layer}), which stands after it in the floor plan",
                    file.display()
                );
            }
        }
    }
    for (name, _) in &plan {
        if name != "lib" && !seen_modules.contains(name) {
            let _ = writeln!(
                problems,
                "the floor plan names `{name}`, which is no module of src/"
            );
        }
    }
    assert!(edges > 50, "only {edges} imports found: the scan is broken");
    assert!(problems.is_empty(), "imports that point up:\n{problems}");
}

#[test]
fn the_scan_finds_each_form_of_import() {
    let text = without_comments(
        r#"
        use crate::digest::TurnDigest;
        use crate::{audit, identity::Operator};
        use crate::{
            pause::{Refusal, Suspended},
            run,
        };
        #[serde(deserialize_with = "crate::unique::value")]
        fn f(x: &crate::registry::Registry) -> crate::ToolOutput { body() }
        // use crate::resume;
        /* crate::journal */
        let url = "https://example.invalid/crate::visible";
        let quote = '"'; let tick = '\''; fn g<'a>(x: &'a str) {}
        macro_rules! m { () => { $crate::gate::Runs } }
        "#,
    );
    assert_eq!(
        imports(&text),
        [
            "digest", "audit", "identity", "pause", "run", "unique", "registry", "lib", "visible"
        ]
    );
}
