//! The agent the command line runs as the demo's host: the demo's builtin
//! tools, its scripted model, and the registry over the store's servers.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolgate::{
    Execute, Registry, Tool, ToolOutput,
    erased::BoxFuture,
    run::{Message, Model, ModelError, Reply, Response, ToolCall, ToolSpec},
};
use toolgate_mcp::{Deadlines, McpProvider};
use toolgate_store::Store;

/// The host name the demo saves its runs under; `toolgate host` resumes them.
pub(crate) const DEMO_HOST: &str = "demo";

/// The server identifier the demo registers the test server under.
pub(crate) const DEMO_SERVER: &str = "notes";

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PathArgs {
    /// A path inside the demo workspace.
    pub(crate) path: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct WriteArgs {
    /// A path inside the demo workspace.
    pub(crate) path: String,
    /// The new content.
    pub(crate) content: String,
}

/// Files the demo reads and writes live here, below the data directory.
#[derive(Clone, Debug)]
pub(crate) struct Workspace(PathBuf);

impl Workspace {
    pub(crate) fn new(data_dir: &Path) -> Self {
        Self(data_dir.join("demo-workspace"))
    }

    /// The file for a relative path, refusing anything that leaves the
    /// workspace.
    fn file(&self, path: &str) -> Result<PathBuf, String> {
        let relative = Path::new(path);
        if path.is_empty()
            || relative
                .components()
                .any(|c| !matches!(c, Component::Normal(_)))
        {
            return Err(format!(
                "`{path}` is not a relative path inside the workspace"
            ));
        }
        Ok(self.0.join(relative))
    }

    /// Lays out the demo's files if they are missing.
    pub(crate) fn prepare(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.0)?;
        let manifest = self.0.join("Cargo.toml");
        if !manifest.exists() {
            std::fs::write(
                manifest,
                "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n",
            )?;
        }
        Ok(())
    }
}

/// Reads a file of the demo workspace.
#[derive(Tool)]
#[tool(effect = read_only)]
pub(crate) struct ReadFile(pub Workspace);

impl Execute for ReadFile {
    type Args = PathArgs;
    async fn execute(&self, args: PathArgs) -> ToolOutput {
        match self.0.file(&args.path).and_then(|f| {
            std::fs::read_to_string(&f).map_err(|e| format!("cannot read `{}`: {e}", args.path))
        }) {
            Ok(text) => ToolOutput::text(text),
            Err(error) => ToolOutput::error(error),
        }
    }
}

/// Writes a file of the demo workspace, replacing it.
#[derive(Tool)]
#[tool(effect = idempotent_write)]
pub(crate) struct WriteFile(pub Workspace);

impl Execute for WriteFile {
    type Args = WriteArgs;
    async fn execute(&self, args: WriteArgs) -> ToolOutput {
        let written = self.0.file(&args.path).and_then(|f| {
            std::fs::write(&f, &args.content)
                .map_err(|e| format!("cannot write `{}`: {e}", args.path))
        });
        match written {
            Ok(()) => ToolOutput::text(format!(
                "wrote {} bytes to {}",
                args.content.len(),
                args.path
            )),
            Err(error) => ToolOutput::error(error),
        }
    }
}

/// What the operator types for [`DraftRelease`].
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ReleaseNotes {
    /// The release notes: one line at least.
    #[schemars(length(min = 1))]
    pub(crate) notes: String,
    /// Whether to mark the release as a pre-release.
    pub(crate) prerelease: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct DraftArgs {
    /// The tag to draft.
    pub(crate) tag: String,
    /// The release notes, from the operator.
    pub(crate) notes: Option<String>,
    /// Whether it is a pre-release.
    pub(crate) prerelease: Option<bool>,
}

/// Drafts a release with notes the operator writes.
#[derive(Tool)]
#[tool(effect = read_only, input = ReleaseNotes)]
pub(crate) struct DraftRelease;

impl Execute for DraftRelease {
    type Args = DraftArgs;
    async fn execute(&self, args: DraftArgs) -> ToolOutput {
        ToolOutput::text(format!(
            "drafted {}{} with notes: {}",
            args.tag,
            if args.prerelease == Some(true) {
                " (pre-release)"
            } else {
                ""
            },
            args.notes.unwrap_or_default()
        ))
    }
}

/// The registry: the demo builtins and every usable server's stored tools.
pub(crate) fn registry(
    store: &Store,
    workspace: &Workspace,
) -> Result<(Registry, Arc<McpProvider>), String> {
    let provider = Arc::new(McpProvider::new(store.clone(), Deadlines::default()));
    let registry = Registry::builder()
        .builtin(ReadFile(workspace.clone()))
        .builtin(WriteFile(workspace.clone()))
        .builtin(DraftRelease)
        .provider(Arc::clone(&provider))
        .build()
        .map_err(|e| e.to_string())?;
    Ok((registry, provider))
}

/// The demo's model: a script whose next reply depends only on how many
/// times it has answered in the transcript, so any process can resume a run.
pub(crate) struct DemoModel;

fn turn(id: &str, name: &str, arguments: serde_json::Value) -> Reply {
    Reply::Calls {
        content: None,
        calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }],
    }
}

impl Model for DemoModel {
    fn respond<'a>(
        &'a self,
        transcript: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Response, ModelError>> {
        let answered = transcript
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let reply = match answered {
            0 => turn("call_1", "read_file", json!({"path": "Cargo.toml"})),
            1 => Reply::Calls {
                content: None,
                calls: vec![
                    ToolCall {
                        id: "call_2".into(),
                        name: "write_file".into(),
                        arguments: json!({"path": "Cargo.toml", "content": "[package]\nname = \"demo\"\nversion = \"0.2.0\"\n"}),
                    },
                    ToolCall {
                        id: "call_2b".into(),
                        name: "write_file".into(),
                        arguments: json!({"path": "CHANGELOG.md", "content": "## 0.2.0\n- (the model's summary)\n"}),
                    },
                    ToolCall {
                        id: "call_2c".into(),
                        name: "read_file".into(),
                        arguments: json!({"path": "Cargo.toml"}),
                    },
                ],
            },
            2 => turn(
                "call_3",
                &format!("{DEMO_SERVER}.write_note"),
                json!({"text": "Release 0.2.0 is being prepared."}),
            ),
            3 => turn(
                "call_4",
                "draft_release",
                json!({"tag": "v0.2.0", "notes": "(the model's guess)"}),
            ),
            _ => {
                let last = transcript.iter().rev().find_map(|m| match m {
                    Message::Tool { content, .. } => Some(content.clone()),
                    _ => None,
                });
                Reply::Text(format!(
                    "Release v0.2.0 prepared. Last result: {}",
                    last.unwrap_or_default()
                ))
            }
        };
        // As a model does, it calls each tool by the wire name it was sent.
        let reply = match reply {
            Reply::Calls { content, mut calls } => {
                for call in &mut calls {
                    call.name = ToolSpec::wire_name(tools, &call.name).to_owned();
                }
                Reply::Calls { content, calls }
            }
            text @ Reply::Text(_) => text,
        };
        Box::pin(async move { Ok(reply.into()) })
    }
}
