//! The turn scan allocates nothing: measured with a counting global
//! allocator, in a test binary of its own so no other test's allocations are
//! counted.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::alloc::System;

use serde_json::json;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use toolgate::{
    Registry,
    run::{ToolCall, TurnScan, scan_turn},
};
use toolgate_tests::{PickBranch, ReadFile, ShowSecrets, WriteFile};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[test]
fn scanning_a_turn_allocates_nothing() {
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(error) => panic!("{error}"),
    };
    let registry = Registry::builder()
        .builtin(ReadFile)
        .builtin(WriteFile)
        .builtin(ShowSecrets)
        .builtin(PickBranch)
        .build();
    let Ok(registry) = registry else {
        panic!("registry must boot");
    };
    let all = runtime.block_on(registry.offer_all());
    let some = runtime.block_on(registry.offer(Some(&["read_file", "write_file"])));
    let call = |name: &str| ToolCall {
        id: "1".into(),
        name: name.into(),
        arguments: json!({"path": "a"}),
    };
    let runs: Vec<ToolCall> = (0..8).map(|_| call("read_file")).collect();
    let unknown = vec![call("read_file"), call("nope"), call("pick_branch")];
    let approval = vec![call("read_file"), call("write_file")];
    let input = vec![call("read_file"), call("pick_branch")];

    // The allocator counts every thread of the process. A scan that
    // allocates does so in every measured round; a stray allocation of the
    // test harness's own thread shows in one round at most. So the rounds
    // are measured three times, and one clean round is the proof.
    let mut seen = Vec::new();
    for _ in 0..3 {
        let region = Region::new(GLOBAL);
        let mut outcomes = [false; 5];
        for _ in 0..1_000 {
            outcomes[0] = matches!(scan_turn(&all, &runs), TurnScan::Run(_));
            outcomes[1] = matches!(scan_turn(&some, &unknown), TurnScan::Run(_));
            outcomes[2] = matches!(scan_turn(&all, &approval), TurnScan::Approval);
            outcomes[3] = matches!(scan_turn(&all, &input), TurnScan::Input { index: 1, .. });
            outcomes[4] = matches!(scan_turn(&some, &input), TurnScan::Run(_));
        }
        let change = region.change();
        assert_eq!(outcomes, [true; 5]);
        let counted = (
            change.allocations,
            change.reallocations,
            change.bytes_allocated,
        );
        if counted == (0, 0, 0) {
            return;
        }
        seen.push(counted);
    }
    panic!("the scan allocated in every round (allocations, reallocations, bytes): {seen:?}");
}
