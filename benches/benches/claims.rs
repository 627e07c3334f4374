//! Decisions recorded under contention, on an SQLite file and on a
//! PostgreSQL database side by side: decisions per second with 1, 4 and 16
//! concurrent deciders on distinct runs, and 16 deciders on one shared run,
//! where exactly one must win every time. PostgreSQL is measured when
//! `TOOLGATE_TEST_POSTGRES` names a server (`.ci/postgres start DIR`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use divan::counter::ItemsCount;
use toolgate_store::{Answer, Backend, ClaimError, Store};

#[path = "../../store/tests/backend/mod.rs"]
mod backend;

fn main() {
    divan::main();
}

/// The backends to measure: SQLite, and PostgreSQL when a server is named.
fn backends() -> Vec<&'static str> {
    if backend::TestDb::postgres_configured() {
        vec!["sqlite", "postgres"]
    } else {
        vec!["sqlite"]
    }
}

fn backend_of(name: &str) -> Backend {
    if name == "postgres" {
        Backend::Postgres
    } else {
        Backend::Sqlite
    }
}

mod shared;

struct Fixture {
    _db: backend::TestDb,
    store: Arc<Store>,
    runtime: tokio::runtime::Runtime,
    /// A stored run's document, re-identified for each new run.
    template: String,
    next: AtomicUsize,
}

impl Fixture {
    fn new(backend: &str) -> Self {
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(16)
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(error) => panic!("{error}"),
        };
        let db = runtime.block_on(backend::TestDb::on(backend_of(backend)));
        let (store, template) = runtime.block_on(async {
            let store = match Store::open(db.location()).await {
                Ok(store) => store,
                Err(error) => panic!("{error}"),
            };
            (store, shared::template().await)
        });
        Self {
            _db: db,
            store: Arc::new(store),
            runtime,
            template,
            next: AtomicUsize::new(0),
        }
    }

    /// Saves `count` fresh runs and returns their ids and digest.
    fn fresh_runs(&self, count: usize) -> Vec<(String, toolgate::suspend::TurnDigest)> {
        self.runtime.block_on(async {
            let mut runs = Vec::with_capacity(count);
            for _ in 0..count {
                let id = format!("run-{}", self.next.fetch_add(1, Ordering::Relaxed));
                let run = shared::reidentified(&self.template, &id);
                assert!(self.store.save_suspended(&run, "bench").await.is_ok());
                runs.push((id, run.digest()));
            }
            runs
        })
    }
}

/// `DECIDERS` concurrent deciders, each deciding its own run.
#[divan::bench(args = backends(), consts = [1, 4, 16], sample_count = 30)]
fn distinct_runs<const DECIDERS: usize>(bencher: divan::Bencher, backend: &str) {
    let deciders = DECIDERS;
    let fixture = Fixture::new(backend);
    bencher
        .counter(ItemsCount::new(deciders))
        .with_inputs(|| fixture.fresh_runs(deciders))
        .bench_local_values(|runs| {
            fixture.runtime.block_on(async {
                let tasks: Vec<_> = runs
                    .into_iter()
                    .enumerate()
                    .map(|(i, (run, digest))| {
                        let store = Arc::clone(&fixture.store);
                        tokio::spawn(async move {
                            store
                                .decide(&run, Some(&digest), &operator(i), Answer::Approve)
                                .await
                                .is_ok()
                        })
                    })
                    .collect();
                let mut won = 0;
                for task in tasks {
                    won += usize::from(matches!(task.await, Ok(true)));
                }
                assert_eq!(won, deciders, "every decider of its own run wins");
            });
        });
}

/// 16 deciders on one run: exactly one wins, every round — the bench fails
/// otherwise, so a completed run means a 100% exactly-one-winner rate.
#[divan::bench(args = backends(), sample_count = 30)]
fn shared_run_16_deciders(bencher: divan::Bencher, backend: &str) {
    let fixture = Fixture::new(backend);
    bencher
        .with_inputs(|| fixture.fresh_runs(1))
        .bench_local_values(|runs| {
            fixture.runtime.block_on(async {
                let (run, digest) = runs[0].clone();
                let tasks: Vec<_> = (0..16)
                    .map(|i| {
                        let store = Arc::clone(&fixture.store);
                        let (run, digest) = (run.clone(), digest.clone());
                        tokio::spawn(async move {
                            store
                                .decide(&run, Some(&digest), &operator(i), Answer::Approve)
                                .await
                        })
                    })
                    .collect();
                let mut winners = 0;
                for task in tasks {
                    match task.await {
                        Ok(Ok(_)) => winners += 1,
                        Ok(Err(ClaimError::AlreadyDecided { .. })) => {}
                        other => panic!("unexpected {other:?}"),
                    }
                }
                assert_eq!(winners, 1, "exactly one winner");
            });
        });
}

fn operator(i: usize) -> toolgate::identity::Operator {
    match toolgate::identity::Operator::new(
        &format!("op-{i}"),
        toolgate::identity::IdentitySource::Flag,
    ) {
        Ok(operator) => operator,
        Err(error) => panic!("{error}"),
    }
}
