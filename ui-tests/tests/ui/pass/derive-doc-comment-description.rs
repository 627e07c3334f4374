// A multi-line doc comment becomes the description; the name defaults to the
// type's name in snake_case.
use toolgate::Tool;

/// Fetches a web page.
///
/// Only `http` and `https` URLs are followed.
#[derive(Tool)]
#[tool(effect = read_only)]
struct HTTPFetchPage;

fn main() {
    assert_eq!(HTTPFetchPage.name(), "http_fetch_page");
    assert_eq!(
        HTTPFetchPage.description(),
        "Fetches a web page.\n\nOnly `http` and `https` URLs are followed."
    );
}
