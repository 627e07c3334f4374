// The seal, rule 3: a crate widens which effects `gate::Runs` admits for a
// local tool, with a type parameter of its own.
use toolgate::{gate, Local};

pub enum Harmless {}

impl gate::RunsWithoutApproval<Harmless> for Local {}

fn main() {}
