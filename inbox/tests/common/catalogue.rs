//! A store's servers and their catalogues, as an operator's console
//! leaves them: for the servers page's suites.

use serde_json::json;
use toolgate::identity::{Channel, IdentitySource, Operator};
use toolgate_store::{DataClass, ImportedTool, NewServer, Store, ToolDeclaration, Transport};

/// Server `id`, named `name`, of `class` (none leaves it inert), with a
/// tool per remote name, each described `Does {name}.`.
pub async fn server(store: &Store, id: &str, name: &str, class: Option<DataClass>, tools: &[&str]) {
    store
        .add_server(NewServer {
            id: id.into(),
            name: name.into(),
            transport: Transport::Stdio {
                command: vec![format!("{id}-mcp")],
            },
            data_class: class,
        })
        .await
        .unwrap();
    let tools: Vec<ImportedTool> = tools
        .iter()
        .map(|remote| tool(id, remote, &format!("Does {remote}.")))
        .collect();
    store.replace_catalogue(id, &tools).await.unwrap();
}

pub fn tool(server: &str, remote: &str, description: &str) -> ImportedTool {
    ImportedTool {
        remote_name: remote.into(),
        local_name: format!("{server}.{remote}"),
        description: description.into(),
        input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        annotations: None,
    }
}

pub fn bob() -> Operator {
    Operator::new("bob", IdentitySource::Flag)
        .unwrap()
        .via(Channel::Console)
}

/// Declares `local` of `server` as bob; "off" with the digest of the tool
/// as it is.
pub async fn declare(store: &Store, server: &str, local: &str, declaration: ToolDeclaration) {
    let digest = store
        .acceptance(server, &[local.to_owned()])
        .await
        .unwrap()
        .digest;
    store
        .declare_tool(server, local, declaration, Some(&digest), &bob())
        .await
        .unwrap();
}
