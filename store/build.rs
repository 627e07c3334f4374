//! Rebuilds the crate when a migration is added, changed or removed: the
//! migrations are embedded at compile time (`sqlx::migrate!`), and a new
//! file alone would not make Cargo compile the crate again.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
