//! The one check of a statement's text: its placeholders against the
//! arguments bound to it.

use crate::ArityMismatch;

/// The most arguments a statement binds: PostgreSQL's limit (SQLite's,
/// 32,766, is lower still).
const MAX_ARGS: usize = 65_535;

/// Checks that the placeholders of `sql` outside quoted text are `$1` …
/// `$bound`, each used at least once (one may be used more than once): in
/// one pass over its bytes, allocating nothing. SQLite's driver binds a
/// missing argument as NULL and ignores an unused one, silently; this
/// refuses both before either driver sees the statement.
///
/// A `$` that continues an identifier (`a$1`) or is not followed by a digit
/// is no placeholder. The store's statements use no dollar-quoted strings
/// and no comments, so they are not looked for.
pub(crate) fn check_arity(sql: &str, bound: usize) -> Result<(), ArityMismatch> {
    if bound <= 64 {
        check_with::<1>(sql, bound)
    } else if bound <= MAX_ARGS {
        check_with::<{ MAX_ARGS.div_ceil(64) }>(sql, bound)
    } else {
        Err(ArityMismatch::TooMany {
            bound,
            max: MAX_ARGS,
        })
    }
}

/// [`check_arity`] for `bound` of at most `64 * WORDS`: a bit a placeholder,
/// on the stack.
fn check_with<const WORDS: usize>(sql: &str, bound: usize) -> Result<(), ArityMismatch> {
    let mut used = [0u64; WORDS];
    let bytes = sql.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        i += 1;
        if let Some(open) = quote {
            if byte == open {
                quote = None;
            }
            continue;
        }
        match byte {
            b'\'' | b'"' => quote = Some(byte),
            b'$' => {
                let continues_identifier = i >= 2
                    && bytes
                        .get(i - 2)
                        .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$'));
                let digits = i;
                let mut placeholder = 0usize;
                while let Some(digit) = bytes.get(i).filter(|b| b.is_ascii_digit()) {
                    placeholder = placeholder
                        .saturating_mul(10)
                        .saturating_add(usize::from(digit - b'0'));
                    i += 1;
                }
                if continues_identifier || i == digits {
                    continue;
                }
                if placeholder == 0 || placeholder > bound {
                    return Err(ArityMismatch::Unbound { placeholder, bound });
                }
                let at = placeholder - 1;
                if let Some(word) = used.get_mut(at / 64) {
                    *word |= 1 << (at % 64);
                }
            }
            _ => {}
        }
    }
    // The first argument no placeholder used, if any.
    for (index, word) in used.iter().enumerate() {
        let first = index * 64;
        if first >= bound {
            break;
        }
        let expected = match bound - first {
            64.. => u64::MAX,
            left => (1u64 << left) - 1,
        };
        let missing = expected & !word;
        if missing != 0 {
            return Err(ArityMismatch::Unused {
                placeholder: first + missing.trailing_zeros() as usize + 1,
                bound,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{ArityMismatch, check_arity};
    use crate::db::placeholders;

    #[test]
    fn every_argument_has_one_placeholder_and_every_placeholder_an_argument() {
        for (sql, bound) in [
            ("SELECT 1", 0),
            ("SELECT $1", 1),
            ("UPDATE t SET a = $1, b = $2 WHERE c = $3", 3),
            // A placeholder used twice, and in any order.
            ("UPDATE t SET a = $2, b = $1 WHERE c < $2", 2),
            ("SELECT $1||$2", 2),
            // Quoted text, a `$` continuing an identifier and a bare `$`
            // hold no placeholders.
            (
                "SELECT '$2', \"$3\", a$4, 'it''s $5' FROM t WHERE a = $1",
                1,
            ),
            ("SELECT '$' || $1 || '$$'", 1),
            ("SELECT ?", 0),
        ] {
            assert_eq!(check_arity(sql, bound), Ok(()), "{sql}");
        }
        let unbound = |placeholder, bound| Err(ArityMismatch::Unbound { placeholder, bound });
        let unused = |placeholder, bound| Err(ArityMismatch::Unused { placeholder, bound });
        assert_eq!(check_arity("SELECT $1", 0), unbound(1, 0));
        assert_eq!(check_arity("SELECT $1, $2", 1), unbound(2, 1));
        assert_eq!(check_arity("SELECT $0", 1), unbound(0, 1));
        assert_eq!(
            check_arity("SELECT $99999999999999999999999", 1),
            unbound(usize::MAX, 1)
        );
        assert_eq!(check_arity("SELECT 1", 1), unused(1, 1));
        assert_eq!(check_arity("SELECT $1, $3", 3), unused(2, 3));
        assert_eq!(check_arity("SELECT '$1'", 1), unused(1, 1));
        // `?` is no placeholder any more: SQLite would take it for one.
        assert_eq!(check_arity("SELECT ?", 1), unused(1, 1));
        assert_eq!(
            check_arity("SELECT 1", 65_536),
            Err(ArityMismatch::TooMany {
                bound: 65_536,
                max: 65_535
            })
        );
        // Past the first 64, across words of the bitmap, and at the limit.
        for bound in [63, 64, 65, 127, 128, 129, 4_500, 65_535] {
            let all = format!("SELECT {}", placeholders(1, bound));
            assert_eq!(check_arity(&all, bound), Ok(()), "{bound}");
            for gap in [1, 64, 65, bound - 1, bound]
                .into_iter()
                .filter(|&gap| gap <= bound)
            {
                let without = format!(
                    "SELECT {}, {}",
                    placeholders(1, gap - 1),
                    placeholders(gap + 1, bound - gap)
                );
                assert_eq!(check_arity(&without, bound), unused(gap, bound), "{bound}");
            }
            assert_eq!(check_arity(&all, bound - 1), unbound(bound, bound - 1));
        }
    }
}
