// Rule 6 through the attribute: a name taken from the function's name is held
// to the tool-name rule as well; the registry would refuse it at boot.
#![allow(dead_code)]

/// Reads a file.
#[toolgate::tool(effect = read_only)]
async fn lies_die_datei_und_gib_ihren_inhalt_zurueck_damit_das_modell_ihn_lesen_kann() -> toolgate::ToolOutput {
    toolgate::ToolOutput::text("")
}

fn main() {}
