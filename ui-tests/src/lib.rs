//! Compile-fail and compile-pass cases live in `tests/ui/`.
