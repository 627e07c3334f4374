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
    /// Where that session's pages live (`/s/KEY/`).
    pages: String,
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
            Ok(opened) => opened,
            Err(error) => panic!("{error}"),
        }
    });
    Waiting {
        runtime,
        store,
        pages: format!("/s/{}/", session.session.csrf_token),
        session: session.secret,
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
    match waiting
        .runtime
        .block_on(waiting.store.waiting_page(None, 50))
    {
        Ok(page) => assert_eq!(page.len(), 50, "the first page holds 50 runs"),
        Err(error) => panic!("{error}"),
    }
    bencher.bench_local(|| {
        let page = waiting
            .runtime
            .block_on(waiting.store.waiting_page(None, 50));
        match page {
            Ok(page) => page.len(),
            Err(error) => panic!("{error}"),
        }
    });
}

/// The inbox's waiting page, its first page, through its router: the page
/// a signed-in operator's browser fetches, rendered whole.
#[divan::bench(args = [1_000, 100_000], sample_count = 200)]
fn first_page_through_the_inbox(bencher: divan::Bencher, count: usize) {
    use tower::ServiceExt as _;
    let waiting = with(count);
    let router =
        toolgate_inbox::Inbox::new(waiting.store.clone(), "http://127.0.0.1:8640").router();
    let cookie = format!("{}={}", toolgate_inbox::SESSION_COOKIE, waiting.session);
    let fetch = || {
        // The inbox answers at its own address only.
        let request = match axum::http::Request::get(&waiting.pages)
            .header(axum::http::header::HOST, "127.0.0.1:8640")
            .header(axum::http::header::COOKIE, &cookie)
            .body(axum::body::Body::empty())
        {
            Ok(request) => request,
            Err(error) => panic!("{error}"),
        };
        waiting.runtime.block_on(async {
            let response = match router.clone().oneshot(request).await {
                Ok(response) => response,
                Err(error) => match error {},
            };
            assert_eq!(response.status(), axum::http::StatusCode::OK);
            match axum::body::to_bytes(response.into_body(), usize::MAX).await {
                Ok(body) => body,
                Err(error) => panic!("{error}"),
            }
        })
    };
    // The page lists the first 50 runs, each a row with a link to its page:
    // not the short page a visitor who is not signed in gets.
    let page = fetch();
    let text = String::from_utf8_lossy(&page);
    let rows = text.matches(&format!("{}runs/", waiting.pages)).count();
    assert_eq!(rows, 50, "the first page lists 50 runs");
    bencher.bench_local(|| fetch().len());
}
