//! toolgate's benchmarks live in `benches/`; see `README.md` beside this
//! crate for what each measures, the figures, and how to reproduce them.
