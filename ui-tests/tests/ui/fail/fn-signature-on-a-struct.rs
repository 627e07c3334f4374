// The attribute is for functions; a type derives `Tool`.
#![allow(dead_code)]

/// Reads a file.
#[toolgate::tool(effect = read_only)]
struct ReadFile;

fn main() {}
