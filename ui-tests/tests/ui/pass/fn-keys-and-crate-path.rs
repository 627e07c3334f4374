// A tool function with every key a function takes, a renamed dependency,
// serde attributes moved to the argument's field, and a tool type in a module.
extern crate toolgate as gatekeeper;

use gatekeeper::{gate::{ruling, Cause, Pause}, Execute, Tool, ToolOutput};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Branch {
    name: String,
}

mod tools {
    use gatekeeper::ToolOutput;

    #[gatekeeper::tool(crate = gatekeeper, effect = read_only, requires_approval)]
    #[tool(name = "secrets.show", description = "Shows a secret.")]
    pub async fn show_secret(
        /// Which secret.
        #[serde(rename = "secret")]
        key: String,
        #[serde(default)]
        reveal: bool,
    ) -> ToolOutput {
        ToolOutput::text(if reveal { format!("{key}=hunter2") } else { format!("{key}=***") })
    }
}

/// Picks the branch the user chooses.
#[gatekeeper::tool(crate = gatekeeper, effect = read_only, input = Branch)]
async fn pick_branch(name: String) -> ToolOutput {
    ToolOutput::text(name)
}

/// Names a raw identifier.
#[gatekeeper::tool(crate = gatekeeper, effect = read_only)]
async fn r#type(r#type: String) -> ToolOutput {
    ToolOutput::text(r#type)
}

fn main() {
    let show = tools::ShowSecret;
    assert_eq!(show.name(), "secrets.show");
    assert_eq!(show.description(), "Shows a secret.");
    assert_eq!(ruling(&show).cause, Cause::Marker);
    let schema = serde_json::to_value(show.parameters()).unwrap();
    assert_eq!(schema["properties"]["secret"]["description"], "Which secret.");
    assert_eq!(schema["required"], serde_json::json!(["secret"]));
    let _: tools::ShowSecretArgs = serde_json::from_value(serde_json::json!({"secret": "k"})).unwrap();

    assert_eq!(ruling(&PickBranch).pause, Pause::Input);
    assert_eq!(PickBranch.name(), "pick_branch");
    assert_eq!(Type.name(), "type");
    let schema = serde_json::to_value(Type.parameters()).unwrap();
    assert_eq!(schema["required"], serde_json::json!(["type"]));
}
