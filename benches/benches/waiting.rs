//! The first page of the waiting runs — what the operator's inbox shows
//! first — with 1,000 and with 100,000 runs waiting, side by side, on an
//! SQLite file: the store's page alone, and the inbox's whole page (the
//! session read, the page rendered) through its router. Keyset pagination
//! over an index of the runs that are not done, so the two counts should
//! cost the same (target: within 1.5×).

use std::sync::OnceLock;

use toolgate_store::{Location, Store};

fn main() {
    divan::main();
}

mod shared;

struct Waiting {
    runtime: tokio::runtime::Runtime,
    store: Store,
    /// A signed-in operator's session cookie.
    session: String,
    _dir: tempfile::TempDir,
}

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => panic!("{error}"),
    }
}

/// A store with `count` runs waiting, each saved through the store.
fn waiting(count: usize) -> Waiting {
    let runtime = runtime();
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => panic!("{error}"),
    };
    let store = runtime.block_on(async {
        let store = match Store::open(&Location::Sqlite(dir.path().join("toolgate.db"))).await {
            Ok(store) => store,
            Err(error) => panic!("{error}"),
        };
        let template = shared::template().await;
        for n in 0..count {
            let run = shared::reidentified(&template, &format!("run-{n}"));
            if let Err(error) = store.save_suspended(&run, "bench").await {
                panic!("{error}");
            }
        }
        store
    });
    let session = runtime.block_on(async {
        let link = match store
            .add_operator("bob", std::time::Duration::from_mins(10))
            .await
        {
            Ok(link) => link,
            Err(error) => panic!("{error}"),
        };
        match store
            .sign_in(&link.secret, std::time::Duration::from_hours(1))
            .await
        {
            Ok(opened) => opened.secret,
            Err(error) => panic!("{error}"),
        }
    });
    Waiting {
        runtime,
        store,
        session,
        _dir: dir,
    }
}

fn with(count: usize) -> &'static Waiting {
    static THOUSAND: OnceLock<Waiting> = OnceLock::new();
    static HUNDRED_THOUSAND: OnceLock<Waiting> = OnceLock::new();
    let cell = if count == 1_000 {
        &THOUSAND
    } else {
        &HUNDRED_THOUSAND
    };
    cell.get_or_init(|| waiting(count))
}

/// The first page (50 runs) of the waiting runs.
#[divan::bench(args = [1_000, 100_000], sample_count = 200)]
fn first_page(bencher: divan::Bencher, count: usize) {
    let waiting = with(count);
    bencher.bench_local(|| {
        let page = waiting
            .runtime
            .block_on(waiting.store.waiting_page(None, 50));
        match page {
            Ok(page) => assert_eq!(page.len(), 50),
            Err(error) => panic!("{error}"),
        }
    });
}

/// The inbox's waiting page, its first page, through its router.
#[divan::bench(args = [1_000, 100_000], sample_count = 200)]
fn first_page_through_the_inbox(bencher: divan::Bencher, count: usize) {
    use tower::ServiceExt as _;
    let waiting = with(count);
    let router =
        toolgate_inbox::Inbox::new(waiting.store.clone(), "http://127.0.0.1:8640").router();
    let cookie = format!("{}={}", toolgate_inbox::SESSION_COOKIE, waiting.session);
    bencher.bench_local(|| {
        let request = match axum::http::Request::get("/")
            .header(axum::http::header::COOKIE, &cookie)
            .body(axum::body::Body::empty())
        {
            Ok(request) => request,
            Err(error) => panic!("{error}"),
        };
        let response = waiting.runtime.block_on(router.clone().oneshot(request));
        match response {
            Ok(response) => assert_eq!(response.status(), axum::http::StatusCode::OK),
            Err(error) => match error {},
        }
    });
}
