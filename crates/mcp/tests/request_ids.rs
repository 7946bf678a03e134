//! Request ids at the edges of the number grammar, through the public parser.

use clawmcp_mcp::jsonrpc::{self, Incoming, Rejection, normalize_number};

/// Seen while writing the fuzz target `jsonrpc` and confirmed by it (a seed in
/// `fuzz/corpus/jsonrpc`): an id whose exponent is `i128::MAX` and whose digits end in a zero
/// overflowed the key's exponent: a panic in debug builds, and in release builds a key equal to
/// that of `1e-170141183460469231731687303715884105728`, another id.
#[test]
fn an_id_whose_exponent_cannot_be_normalised_is_refused_not_wrapped() {
    let max = i128::MAX;
    assert_eq!(normalize_number(&format!("10e{max}")), None);
    assert_eq!(normalize_number(&format!("1e{max}")).as_deref(), Some(format!("1e{max}").as_str()), "the edge itself");
    let body = format!(r#"{{"jsonrpc":"2.0","id":10e{max},"method":"ping"}}"#);
    match jsonrpc::parse(body.as_bytes()) {
        Err(Rejection::Reply { id: None, error }) => assert_eq!(error.code.code(), -32600, "{}", error.message),
        other => panic!("expected an invalid-request reply, got {other:?}"),
    }
    let edge = format!(r#"{{"jsonrpc":"2.0","id":1e{max},"method":"ping"}}"#);
    assert!(matches!(jsonrpc::parse(edge.as_bytes()), Ok(Incoming::Request { .. })));
}
