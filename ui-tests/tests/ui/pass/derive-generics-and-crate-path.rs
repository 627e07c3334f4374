// A generic tool, a renamed dependency, and the name and description keys.
extern crate toolgate as gatekeeper;

use gatekeeper::{gate::ruling, Tool};

#[derive(Tool)]
#[tool(crate = gatekeeper, effect = idempotent_write, name = "put", description = "Stores a value.")]
struct Put<S: Send + Sync + 'static> {
    store: S,
}

fn main() {
    let put = Put { store: () };
    let () = put.store;
    assert_eq!(put.name(), "put");
    assert_eq!(put.description(), "Stores a value.");
    assert!(ruling(&put).requires_approval());
}
