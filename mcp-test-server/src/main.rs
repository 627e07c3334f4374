//! The test server's executable; see the library for its flags.

#[tokio::main]
async fn main() {
    if let Err(error) = toolgate_mcp_test_server::run(std::env::args().skip(1)).await {
        eprintln!("toolgate-mcp-test-server: {error}");
        std::process::exit(2);
    }
}
