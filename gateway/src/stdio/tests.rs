//! The stdio transport's tests: every line answered, ids recovered.
#![allow(clippy::unwrap_used, reason = "a test that fails says why")]

use super::judge::is_reply;
use super::*;
use serde_json::Value;
use tokio::io::AsyncReadExt as _;

/// Every line of `input` through the transport: what it hands rmcp, and
/// what it writes back, line by line.
async fn through(input: Vec<u8>, max: usize) -> (Vec<ClientJsonRpcMessage>, Vec<Value>) {
    let (messages, written) = through_raw(input, max).await;
    let answers = written
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (messages, answers)
}

/// What reached rmcp, and the answers' text as written.
async fn through_raw(input: Vec<u8>, max: usize) -> (Vec<ClientJsonRpcMessage>, String) {
    let (mut client_out, server_out) = tokio::io::duplex(64 * 1024);
    let writer = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt as _;
        client_out.write_all(&input).await.unwrap();
    });
    let (server_in, mut client_in) = tokio::io::duplex(64 * 1024);
    let mut transport = StdioTransport::new(server_out, server_in).with_max_line_length(max);
    let mut messages = Vec::new();
    while let Some(message) = transport.receive().await {
        messages.push(message);
    }
    writer.await.unwrap();
    drop(transport);
    let mut written = String::new();
    client_in.read_to_string(&mut written).await.unwrap();
    (messages, written)
}

#[tokio::test]
async fn an_id_no_64_bit_integer_holds_is_echoed_as_written_and_said_why() {
    let mut input = Vec::new();
    for id in [
        "18446744073709551616",
        "123456789012345678901234567890",
        "1.5",
    ] {
        input.extend_from_slice(
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).as_bytes(),
        );
        input.push(b'\n');
    }
    let (messages, written) = through_raw(input, MAX_LINE_LENGTH).await;
    assert!(messages.is_empty(), "{messages:?}");
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(lines.len(), 3, "{written}");
    for (line, id) in lines.iter().zip([
        "18446744073709551616",
        "123456789012345678901234567890",
        "1.5",
    ]) {
        assert!(line.contains(&format!(r#""id":{id},"#)), "{line}");
        assert!(line.contains("-32600"), "{line}");
        assert!(line.contains("outside the 64-bit integers"), "{line}");
    }
}

fn nested(depth: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}{}}}}}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

#[tokio::test]
async fn each_line_that_does_not_read_is_answered_with_its_id_when_it_can_be_found() {
    let mut input = Vec::new();
    for line in [
        nested(200).into_bytes(),
        br#"{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":{"name":"x","arguments":{"t":"\ud800"}}}"#.to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\xfe\"}}".to_vec(),
        br#"{"jsonrpc":"2.0","id":14,"method":"tools/li"#.to_vec(),
        br#"[{"jsonrpc":"2.0","id":15,"method":"ping"}]"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":16,"method":7}"#.to_vec(),
        br#"{"jsonrpc":"2.0","method":"notifications/odd","params":7}"#.to_vec(),
        b"   ".to_vec(),
        br#"{"jsonrpc":"2.0","id":17,"method":"ping"}"#.to_vec(),
    ] {
        input.extend_from_slice(&line);
        input.push(b'\n');
    }
    let (messages, answers) = through(input, MAX_LINE_LENGTH).await;
    assert_eq!(messages.len(), 1, "only the ping reaches rmcp");
    let codes: Vec<(i64, Value)> = answers
        .iter()
        .map(|a| (a["error"]["code"].as_i64().unwrap(), a["id"].clone()))
        .collect();
    assert_eq!(
        codes,
        [
            (-32700, Value::from(11)),
            (-32700, Value::from("s-1")),
            (-32700, Value::from(13)),
            (-32700, Value::from(14)),
            (-32600, Value::Null),
            (-32600, Value::from(16)),
        ]
    );
}

#[tokio::test]
async fn a_line_past_the_bound_is_answered_and_the_next_one_read() {
    let mut input = br#"{"jsonrpc":"2.0","id":21,"method":"ping","params":{"pad":""#.to_vec();
    input.extend(std::iter::repeat_n(b'x', 5000));
    input.extend_from_slice(b"\"}}\n{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"ping\"}\n");
    let (messages, answers) = through(input, 1000).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0]["error"]["code"], -32700);
    assert_eq!(answers[0]["id"], 21);
}

#[tokio::test]
async fn a_last_line_without_its_newline_is_read() {
    let (messages, answers) = through(br#"{"jsonrpc":"2.0","id":3,"method""#.to_vec(), 100).await;
    assert!(messages.is_empty());
    assert_eq!(answers[0]["id"], 3);
}

#[test]
fn a_reply_that_does_not_read_is_not_answered() {
    let reply =
        br#"{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"reason":"\ud800"}}}"#;
    assert!(is_reply(reply));
    assert!(matches!(judge(reply), Heard::Nothing));
    let cut = br#"{"jsonrpc":"2.0","id":3,"error":{"code":1"#;
    assert!(matches!(judge(cut), Heard::Nothing));
    let request = br#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"\ud800"#;
    assert!(!is_reply(request));
    assert!(matches!(judge(request), Heard::Answer(_)));
}

/// A socket — how Node starts a child's standard streams — is driven
/// on the reactor: a line written at one end is read at the other, and
/// an answer comes back, both ways through the copies.
#[tokio::test]
async fn a_socket_is_read_and_written_on_the_reactor() {
    use std::io::{BufRead as _, Write as _};
    use std::os::fd::AsFd as _;
    let (client, server) = std::os::unix::net::UnixStream::pair().unwrap();
    let read = socket(server.as_fd()).unwrap();
    let write = socket(server.as_fd()).unwrap();
    let mut transport = StdioTransport::new(
        Input(InputKind::Socket(read)),
        Output(OutputKind::Socket(write)),
    );
    let mut client_write = client.try_clone().unwrap();
    let reader = std::thread::spawn(move || {
        client_write
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\nnot json\n")
            .unwrap();
        let mut line = String::new();
        io::BufReader::new(client).read_line(&mut line).unwrap();
        line
    });
    assert!(matches!(
        transport.receive().await,
        Some(ClientJsonRpcMessage::Request(_))
    ));
    // The line that is not JSON is answered; the client, answered,
    // closes its end.
    assert!(transport.receive().await.is_none());
    let answer: Value = serde_json::from_str(&reader.join().unwrap()).unwrap();
    assert_eq!(answer["error"]["code"], -32700);
}

#[test]
fn what_is_not_a_socket_is_left_to_the_other_handles() {
    use std::os::fd::AsFd as _;
    let (read, _write) = io::pipe().unwrap();
    assert!(socket(read.as_fd()).is_none());
}

/// A pipe opened again through `/proc/self/fd` is one the reactor
/// drives, and the descriptor it came from keeps blocking.
#[tokio::test]
async fn a_pipe_is_opened_again_through_proc() {
    use std::io::Write as _;
    use std::os::fd::AsRawFd as _;
    let (read, mut write) = io::pipe().unwrap();
    let mut receiver = tokio::net::unix::pipe::OpenOptions::new()
        .open_receiver(format!("/proc/self/fd/{}", read.as_raw_fd()))
        .unwrap();
    write.write_all(b"line\n").unwrap();
    let mut got = [0u8; 5];
    tokio::io::AsyncReadExt::read_exact(&mut receiver, &mut got)
        .await
        .unwrap();
    assert_eq!(&got, b"line\n");
}

#[test]
fn the_id_is_found_at_the_top_level_only() {
    let id = |line: &str| recover_id(line.as_bytes());
    assert_eq!(id(r#"{"id":7}"#).as_deref(), Some("7"));
    assert_eq!(
        id(r#" { "a" : {"id": 1, "b": "\"}"}, "id" : "x\"y" , "#).as_deref(),
        Some(r#""x\"y""#)
    );
    assert_eq!(
        id(r#"{"params":[[{"id":1}]],"id":-2.5e3}"#).as_deref(),
        Some("-2.5e3")
    );
    assert_eq!(
        id("{\"id\":123456789012345678901234567890}").as_deref(),
        Some("123456789012345678901234567890")
    );
    // Cut where the number may go on; of another kind; not an object.
    assert_eq!(id(r#"{"id":12"#), None);
    assert_eq!(id(r#"{"id":null}"#), None);
    assert_eq!(id(r#"{"id":01}"#), None);
    assert_eq!(id(r#"{"id":"\ud800"}"#), None);
    assert_eq!(id(r#"[{"id":1}]"#), None);
    assert_eq!(id(r#"{"a":{"id":1}"#), None);
    assert_eq!(id(&format!(r#"{{"id":"{}"}}"#, "x".repeat(2000))), None);
}
