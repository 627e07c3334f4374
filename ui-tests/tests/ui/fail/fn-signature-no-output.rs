// A tool function returns what the model reads.
#![allow(dead_code)]

/// Deletes a file.
#[toolgate::tool(effect = non_idempotent_write)]
async fn delete_file(path: String) {
    let _ = path;
}

fn main() {}
