//! An erased tool asks for its parameter schema once, when it is first
//! needed — not at erasure — and keeps that answer; a hand-erased tool's
//! description too. A tool cannot show a model or a reviewer one schema and
//! later another.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::Schema;
use serde_json::{Map, Value, json};
use toolgate::erased::{BoxFuture, DynTool, ErasedTool};
use toolgate::gate::{ApprovalByOperator, Effect, Origin};
use toolgate::{
    Execute, NonIdempotentWrite, OperatorDeclaration, Remote, RemoteApproval, RemoteTool, Tool,
    ToolOutput,
};

fn schema(key: &str) -> Schema {
    Schema::try_from(json!({"type": "object", "properties": {key: {"type": "string"}}}))
        .expect("an object is a schema")
}

/// A typed tool whose schema names how often it was asked.
struct Counting {
    asked: Arc<AtomicUsize>,
}

impl Tool for Counting {
    type Origin = Remote;
    type Effect = NonIdempotentWrite;
    type Gate = ApprovalByOperator;
    fn name(&self) -> &str {
        "counting"
    }
    fn description(&self) -> &str {
        "Counts how often its schema is asked for."
    }
}
impl RemoteTool for Counting {
    fn server(&self) -> &str {
        "bridge"
    }
}
impl RemoteApproval for Counting {
    fn operator_declaration(&self) -> OperatorDeclaration {
        OperatorDeclaration::ApprovalRequired
    }
}
impl Execute for Counting {
    type Args = Map<String, Value>;
    fn parameters(&self) -> Schema {
        let n = self.asked.fetch_add(1, Ordering::SeqCst);
        schema(&format!("asked_{n}"))
    }
    async fn execute(&self, _: Self::Args) -> ToolOutput {
        ToolOutput::text("ran")
    }
}

#[test]
fn a_typed_tool_is_asked_for_its_schema_once_when_first_needed() {
    let asked = Arc::new(AtomicUsize::new(0));
    let tool = ErasedTool::new(Counting {
        asked: Arc::clone(&asked),
    });
    assert_eq!(asked.load(Ordering::SeqCst), 0, "not asked at erasure");
    let clone = tool.clone();
    let readers: Vec<_> = (0..8)
        .map(|_| {
            let tool = tool.clone();
            std::thread::spawn(move || tool.parameters().as_value().clone())
        })
        .collect();
    let seen: Vec<Value> = readers
        .into_iter()
        .map(|reader| reader.join().expect("a reader finishes"))
        .collect();
    assert_eq!(asked.load(Ordering::SeqCst), 1, "asked once");
    let first = clone.parameters().as_value().clone();
    assert_eq!(first, *schema("asked_0").as_value());
    assert!(seen.iter().all(|value| *value == first));
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

/// A hand-erased tool whose every answer differs from the one before.
struct Flipping {
    descriptions: AtomicUsize,
    asked: AtomicUsize,
    schemas: [Schema; 2],
}

impl DynTool for Flipping {
    fn name(&self) -> &str {
        "flipping"
    }
    fn description(&self) -> &str {
        if self
            .descriptions
            .fetch_add(1, Ordering::SeqCst)
            .is_multiple_of(2)
        {
            "The first description."
        } else {
            "Another description."
        }
    }
    fn parameters(&self) -> &Schema {
        let n = self.asked.fetch_add(1, Ordering::SeqCst);
        &self.schemas[n % 2]
    }
    fn origin(&self) -> Origin {
        Origin::Local
    }
    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }
    fn execute(&self, _: Value) -> BoxFuture<'_, ToolOutput> {
        Box::pin(async { ToolOutput::text("ran") })
    }
}

#[test]
fn a_hand_erased_tool_shows_its_first_schema_and_description_for_good() {
    let flipping = Arc::new(Flipping {
        descriptions: AtomicUsize::new(0),
        asked: AtomicUsize::new(0),
        schemas: [schema("first"), schema("second")],
    });
    let tool = ErasedTool::from_dyn(Arc::clone(&flipping) as Arc<dyn DynTool>);
    let parameters = tool.parameters().as_value().clone();
    let description = tool.description().to_owned();
    for _ in 0..5 {
        assert_eq!(*tool.parameters().as_value(), parameters);
        assert_eq!(tool.description(), description);
    }
    // The tool itself still flips: the erased tool just never asks again.
    assert_eq!(flipping.asked.load(Ordering::SeqCst), 1);
    assert_eq!(flipping.descriptions.load(Ordering::SeqCst), 1);
    assert_ne!(flipping.parameters().as_value(), &parameters);
    assert_ne!(flipping.description(), description);
}
