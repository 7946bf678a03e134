//! The user-facing errors, checked in under `tests/it/errors.txt`: what a user sees for each
//! mistake the issue lists (a mistyped tool or subcommand, arguments of the wrong shape, a
//! command string where an argv belongs, an unknown setting, a node that is not running, ...),
//! with its exit status. One file, so a change to any message shows in review.
//!
//! The sandbox's paths and the node's port are replaced by `<SANDBOX>` and `<PORT>`.
//!
//! After an intended change: `CLAWMCP_UPDATE_ERRORS=1 cargo test -p clawmcp --test it errors`,
//! then read the diff.

use std::fs;
use std::path::Path;

use crate::support::{Node, Sandbox, free_port};

const UPDATE: &str = "CLAWMCP_UPDATE_ERRORS";

/// One mistake: the surface (`call` and `approvals` are pointed at the node, `settings` at its
/// data dir, `raw` gets nothing added) and the arguments after it.
struct Case {
    title: &'static str,
    surface: &'static str,
    args: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case { title: "a mistyped tool name", surface: "call", args: &["system.whch"] },
    Case {
        title: "an argument of the wrong type",
        surface: "call",
        args: &["system.which", "--params", r#"{"bins": 5}"#],
    },
    Case { title: "a required argument missing", surface: "call", args: &["system.which"] },
    Case {
        title: "a misspelt argument",
        surface: "call",
        args: &["system.which", "--params", r#"{"bins": ["ls"], "bin": ["sh"]}"#],
    },
    Case {
        title: "an argument the tool does not take",
        surface: "call",
        args: &["device.info", "--params", r#"{"verbose": true}"#],
    },
    Case {
        title: "a command line as one string",
        surface: "call",
        args: &["system.run", "--params", r#"{"command": "uname -a"}"#],
    },
    Case { title: "an empty program name", surface: "call", args: &["system.run", "--params", r#"{"command": [""]}"#] },
    Case { title: "params that are not JSON", surface: "call", args: &["system.which", "--params", "{bins: [ls]}"] },
    Case { title: "an unknown setting", surface: "settings", args: &["set", "EnableMcpSrever", "false"] },
    Case {
        title: "a switch that is not true or false",
        surface: "settings",
        args: &["set", "EnableMcpServer", "maybe"],
    },
    Case { title: "an approval id nobody asked for", surface: "approvals", args: &["allow-once", "no-such-id"] },
    Case { title: "a mistyped subcommand", surface: "raw", args: &["nodee"] },
];

fn normalise(text: &str, sandbox: &Sandbox, port: u16) -> String {
    let root = sandbox.root().display().to_string();
    text.replace(&root, "<SANDBOX>").replace(&format!(":{port}"), ":<PORT>")
}

fn transcript(sandbox: &Sandbox, node: &Node) -> String {
    let mut out = String::new();
    for case in CASES {
        let mut command = match case.surface {
            "raw" => sandbox.clawmcp(case.args),
            surface => node.run(sandbox, surface, case.args),
        };
        let output = command.output().expect("clawmcp runs");
        let stderr = String::from_utf8(output.stderr).expect("UTF-8 errors");
        out.push_str(&format!(
            "## {}\n$ {}\nexit {}\n{}\n",
            case.title,
            std::iter::once("clawmcp")
                .chain((case.surface != "raw").then_some(case.surface))
                .chain(case.args.iter().copied())
                .collect::<Vec<_>>()
                .join(" "),
            output.status.code().map_or_else(|| "by a signal".to_owned(), |code| code.to_string()),
            normalise(stderr.trim_end(), sandbox, node.port)
        ));
    }
    // No node at all: what every client command says.
    let port = free_port();
    let output = sandbox.clawmcp(["call", "--port", &port.to_string(), "device.info"]).output().expect("clawmcp runs");
    out.push_str(&format!(
        "## no node listening\n$ clawmcp call --port <PORT> device.info\nexit {}\n{}\n",
        output.status.code().unwrap_or(-1),
        normalise(String::from_utf8_lossy(&output.stderr).trim_end(), sandbox, port)
    ));
    out
}

#[test]
fn every_user_facing_error_matches_its_snapshot() {
    let sandbox = Sandbox::new();
    let node = Node::start(&sandbox);
    let text = transcript(&sandbox, &node);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/errors.txt");
    if std::env::var_os(UPDATE).is_some() {
        fs::write(&path, &text).unwrap();
        return;
    }
    let expected =
        fs::read_to_string(&path).unwrap_or_else(|_| panic!("no {}: run with {UPDATE}=1 to write it", path.display()));
    if text != expected {
        let differing: Vec<&str> = text
            .split("\n## ")
            .zip(expected.split("\n## "))
            .filter(|(ours, theirs)| ours != theirs)
            .map(|(ours, _)| ours.lines().next().unwrap_or_default())
            .collect();
        panic!(
            "user-facing errors changed ({differing:?}); if intended, run {UPDATE}=1 cargo test -p clawmcp --test it \
             errors and review the diff.\n--- now ---\n{text}"
        );
    }
    // Every case failed (a snapshot of a success would guard nothing).
    assert!(!text.contains("\nexit 0\n"), "{text}");
}
