//! How long one `run(["true"])` takes, spawn to reaped: the cost of starting a call's process
//! tree. Prints numbers, asserts nothing (a measurement, not a test).
//!
//! `cargo run --release -p clawmcp-process --example spawn_overhead [-- COUNT]`

#![allow(clippy::print_stdout, reason = "the example's output is its measurement")]

use std::time::{Duration, Instant};

use clawmcp_process::{Launch, run};
use tokio_util::sync::CancellationToken;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let count: usize = std::env::args().nth(1).map_or(200, |arg| arg.parse().expect("COUNT is a number"));
    let argv = ["true".to_string()];
    let cancel = CancellationToken::new();
    let mut samples = Vec::with_capacity(count);
    // One untimed run first, so the first sample does not pay for loading `true`'s pages.
    let launch = Launch { argv: &argv, cwd: None, env_overrides: &[], passed_fds: &[] };
    run(launch, Duration::from_secs(10), &cancel).await.expect("`true` runs");
    for _ in 0..count {
        let started = Instant::now();
        let outcome = run(launch, Duration::from_secs(10), &cancel).await.expect("`true` runs");
        samples.push(started.elapsed());
        assert_eq!(outcome.exit_code, 0);
    }
    samples.sort();
    let total: Duration = samples.iter().sum();
    let at = |fraction: f64| samples[((samples.len() - 1) as f64 * fraction).round() as usize];
    println!(
        "{count} runs of `true`: mean {:?}, p50 {:?}, p90 {:?}, p99 {:?}, max {:?}",
        total / count as u32,
        at(0.5),
        at(0.9),
        at(0.99),
        samples[samples.len() - 1]
    );
}
