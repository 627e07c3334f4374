//! A fleet of processes on one store: 4 host processes and 16 deciding
//! processes over 1,000 runs, on each backend. Every deciding process tries to decide every
//! run; every host process resumes what it can claim. Exactly one decision
//! per run, exactly one resume per run, and no run left behind — counted
//! from the processes' own reports, the tool's ledger and the database.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test that fails should say why: a panic with the cause, never a default that hides it"
)]

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use toolgate::identity::{IdentitySource, Operator};
use toolgate::{
    Agent, Execute, Registry, Tool, ToolOutput,
    run::{Outcome, Reply, RunRequest, ToolCall},
    suspend::SuspendedRun,
    testing::{MemoryLog, ScriptedModel},
};
use toolgate_store::{Answer, ClaimError, Ended, Host, Location, Query, Store};

mod backend;
use backend::TestDb;

/// This suite again, on PostgreSQL.
#[test]
fn on_postgres_too() {
    backend::rerun_on_postgres();
}

const HOSTS: usize = 4;
const DECIDERS: usize = 16;
const OWNER: &str = "fleet";

/// Where a role process finds its store, its ledger and its orders.
const ROLE_ENV: &str = "TOOLGATE_FLEET_ROLE";
const LOCATION_ENV: &str = "TOOLGATE_FLEET_DATABASE";
const DIR_ENV: &str = "TOOLGATE_FLEET_DIR";

const RUNS: usize = 1_000;

/// Pays an invoice: appends its run to the ledger, once per execution.
#[derive(Tool)]
#[tool(effect = non_idempotent_write)]
struct Pay(PathBuf);

impl Execute for Pay {
    type Args = Map<String, Value>;
    async fn execute(&self, args: Self::Args) -> ToolOutput {
        let run = args.get("run").and_then(Value::as_str).unwrap_or("?");
        let line = format!("{run}\n");
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.0)
            .and_then(|mut file| file.write_all(line.as_bytes()));
        match written {
            Ok(()) => ToolOutput::text("paid"),
            Err(error) => ToolOutput::error(format!("ledger: {error}")),
        }
    }
}

fn registry(dir: &Path) -> Registry {
    Registry::builder()
        .builtin(Pay(dir.join("ledger.txt")))
        .build()
        .unwrap()
}

async fn paused(registry: &Registry, run: &str) -> SuspendedRun {
    let model = ScriptedModel::new([Reply::Calls {
        content: None,
        calls: vec![ToolCall {
            id: "p1".into(),
            name: "pay".into(),
            arguments: json!({ "run": run }),
        }],
    }]);
    let log = MemoryLog::new();
    let agent = Agent::new(registry, &model, &log);
    match agent.start(RunRequest::new("alice", "pay")).await {
        Ok(Outcome::AwaitingApproval(run)) => SuspendedRun::AwaitingApproval(run),
        other => panic!("expected an approval pause, got {other:?}"),
    }
}

/// The role a re-run of this binary plays: `host N` or `decider N`.
#[test]
fn fleet_role_process() {
    let Ok(role) = std::env::var(ROLE_ENV) else {
        return;
    };
    let location = Location::parse(&std::env::var(LOCATION_ENV).unwrap());
    let dir = PathBuf::from(std::env::var(DIR_ENV).unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let report = runtime.block_on(async {
        let store = Store::open(location).await.unwrap();
        match role.split_once(' ') {
            Some(("host", _)) => host(store, &dir).await,
            Some(("decider", n)) => decider(store, n.parse().unwrap()).await,
            _ => panic!("unknown role {role}"),
        }
    });
    println!("REPORT {report}");
}

/// Resumes whatever it claims until told to stop; reports how many.
async fn host(store: Store, dir: &Path) -> String {
    let registry = registry(dir);
    let host = Host::new(store, OWNER).unwrap();
    let stop = dir.join("stop");
    let mut resumed = 0usize;
    let mut other = Vec::new();
    while !stop.exists() {
        let Ok(task) = tokio::time::timeout(
            Duration::from_millis(300),
            host.wait(Duration::from_millis(100)),
        )
        .await
        else {
            continue;
        };
        let task = task.unwrap();
        let model = ScriptedModel::new([Reply::Text("done".into())]);
        let ended = host.resume(task, &registry, &model).await.unwrap();
        match ended.ended {
            Ended::Finished { .. } => resumed += 1,
            other_end => other.push(format!("{}: {other_end:?}", ended.run_id)),
        }
    }
    assert!(other.is_empty(), "runs that did not finish: {other:?}");
    format!("resumed {resumed}")
}

/// Tries to decide every open run, in an order of its own.
async fn decider(store: Store, n: usize) -> String {
    let me = Operator::new(&format!("decider-{n}"), IdentitySource::Flag).unwrap();
    // Every run, whatever became of it before this decider started.
    let mut pending = store
        .all_runs()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.run_id)
        .collect::<Vec<_>>();
    pending.sort();
    // Each decider walks the runs from its own starting point, so races
    // happen all along the list rather than only at its head.
    let start = n * pending.len() / DECIDERS;
    pending.rotate_left(start);
    let (mut won, mut lost) = (0usize, 0usize);
    for run_id in pending {
        let run = match store.load_suspended(&run_id).await {
            Ok(run) => run,
            // Decided by another between the listing and now.
            Err(toolgate_store::LoadError::NotFound(_)) => {
                lost += 1;
                continue;
            }
            Err(error) => panic!("{run_id}: {error}"),
        };
        match store
            .decide(&run_id, Some(&run.digest()), &me, Answer::Approve)
            .await
        {
            Ok(_) => won += 1,
            Err(ClaimError::AlreadyDecided { .. }) => lost += 1,
            Err(error) => panic!("{run_id}: {error}"),
        }
    }
    format!("won {won} lost {lost}")
}

fn spawn(role: &str, location: &Location, dir: &Path) -> Child {
    let url = match location {
        Location::Sqlite(path) => path.display().to_string(),
        Location::Postgres(url) => url.clone(),
    };
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "fleet_role_process",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(ROLE_ENV, role)
        .env(LOCATION_ENV, url)
        .env(DIR_ENV, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn report(child: Child, role: &str) -> String {
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{role} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .find_map(|l| l.split_once("REPORT ").map(|(_, report)| report))
        .unwrap_or_else(|| panic!("{role} reported nothing:\n{stdout}"))
        .to_owned()
}

fn number(report: &str, word: &str) -> usize {
    let mut words = report.split_whitespace();
    while let Some(w) = words.next() {
        if w == word {
            return words.next().unwrap().parse().unwrap();
        }
    }
    panic!("no `{word}` in `{report}`")
}

#[test]
fn four_hosts_and_sixteen_deciders_resume_every_run_exactly_once() {
    if std::env::var(ROLE_ENV).is_ok() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let db = runtime.block_on(TestDb::new());
    let dir = db.dir().to_owned();
    let total = RUNS;
    let store = runtime.block_on(async {
        let store = Store::open(db.location()).await.unwrap();
        let registry = registry(&dir);
        for i in 0..total {
            let run = paused(&registry, &format!("invoice-{i:04}")).await;
            store.save_suspended(&run, OWNER).await.unwrap();
        }
        store
    });
    let started = Instant::now();
    let hosts: Vec<_> = (0..HOSTS)
        .map(|i| spawn(&format!("host {i}"), &db.location(), &dir))
        .collect();
    let deciders: Vec<_> = (0..DECIDERS)
        .map(|i| spawn(&format!("decider {i}"), &db.location(), &dir))
        .collect();
    let decided: Vec<String> = deciders
        .into_iter()
        .enumerate()
        .map(|(i, child)| report(child, &format!("decider {i}")))
        .collect();
    let decided_after = started.elapsed();
    // Wait for the hosts to work through every decided run, then a little
    // longer, so that a second resume of any run would be caught.
    let ledger = dir.join("ledger.txt");
    let lines = || std::fs::read_to_string(&ledger).map_or(0, |text| text.lines().count());
    let deadline = Instant::now() + Duration::from_mins(10);
    while lines() < total && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let resumed_after = started.elapsed();
    std::thread::sleep(Duration::from_secs(1));
    std::fs::write(dir.join("stop"), "").unwrap();
    let resumed: Vec<String> = hosts
        .into_iter()
        .enumerate()
        .map(|(i, child)| report(child, &format!("host {i}")))
        .collect();

    let won: usize = decided.iter().map(|r| number(r, "won")).sum();
    let lost: usize = decided.iter().map(|r| number(r, "lost")).sum();
    let by_host: Vec<usize> = resumed.iter().map(|r| number(r, "resumed")).collect();
    let mut paid: BTreeMap<String, usize> = BTreeMap::new();
    for line in std::fs::read_to_string(&ledger).unwrap().lines() {
        *paid.entry(line.to_owned()).or_default() += 1;
    }
    let (standing, done) = runtime.block_on(async {
        let standing =
            Query::new("SELECT COUNT(*) FROM decision WHERE voided IS NULL AND partial = 0")
                .scalar_on::<i64>(&store)
                .await
                .unwrap();
        let done = Query::new(
            "SELECT COUNT(*) FROM suspended_run WHERE state = 'decided' AND execution = 'done'",
        )
        .scalar_on::<i64>(&store)
        .await
        .unwrap();
        (standing, done)
    });
    println!(
        "{} runs, {HOSTS} host processes, {DECIDERS} deciding processes on {}: \
         {won} decisions won, {lost} attempts told the run was decided; \
         resumed per host {by_host:?} (sum {}); {} runs paid, {} payments; \
         {standing} standing decisions, {done} runs done; \
         all decided after {:.1} s, all resumed after {:.1} s",
        total,
        backend::backend(),
        by_host.iter().sum::<usize>(),
        paid.len(),
        paid.values().sum::<usize>(),
        decided_after.as_secs_f64(),
        resumed_after.as_secs_f64(),
    );
    assert_eq!(won, total, "every run decided exactly once");
    assert_eq!(won + lost, total * DECIDERS, "every attempt accounted for");
    assert_eq!(
        by_host.iter().sum::<usize>(),
        total,
        "every run resumed once"
    );
    assert_eq!(paid.len(), total, "no run lost");
    assert!(
        paid.values().all(|n| *n == 1),
        "a run paid twice: {:?}",
        paid.iter().filter(|(_, n)| **n > 1).collect::<Vec<_>>()
    );
    assert_eq!(standing, i64::try_from(total).unwrap());
    assert_eq!(done, i64::try_from(total).unwrap());
}
