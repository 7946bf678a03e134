//! gpsd's JSON protocol over loopback TCP: connect, send `?WATCH={"enable":true,"json":true}`,
//! read reports (one JSON object a line: `VERSION`, `DEVICES`, `WATCH`, `SKY`, `TPV`, ...) until the
//! first `TPV` with a 2D or 3D fix (`mode` 2 or 3) and a position. A connection per call: gpsd
//! keeps no per-client state worth keeping, and an idle watcher would make it read the receiver
//! for nobody. Lines are bounded ([`MAX_LINE`]); the wait by the call's deadline and its cancel.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Fix, LocateError};
use crate::availability::MissingBackend;

/// The longest report line read; gpsd's own limit for a JSON report is 10 KiB (`GPS_JSON_RESPONSE_MAX`
/// is 4096 plus SKY's satellites), so a longer one is not gpsd.
pub const MAX_LINE: u64 = 64 * 1024;
/// How long the availability probe waits for a connect on loopback.
const PROBE_TIMEOUT: Duration = Duration::from_millis(300);
const WATCH: &[u8] = b"?WATCH={\"enable\":true,\"json\":true}\n";

/// Whether something accepts connections at gpsd's address (synchronous: an availability probe).
pub fn probe(address: SocketAddr) -> Result<(), MissingBackend> {
    TcpStream::connect_timeout(&address, PROBE_TIMEOUT).map(drop).map_err(|error| {
        MissingBackend::new(
            format!("no gpsd at {address} ({error})"),
            "apt install gpsd, with your GPS receiver configured in /etc/default/gpsd",
        )
    })
}

/// The part of a report read: its class, and a TPV's fix.
#[derive(Debug, Deserialize)]
struct Report {
    class: String,
    #[serde(default)]
    mode: u8,
    lat: Option<f64>,
    lon: Option<f64>,
    /// Estimated horizontal position error (95 %), metres; older gpsd gives only epx/epy.
    eph: Option<f64>,
    epx: Option<f64>,
    epy: Option<f64>,
    time: Option<String>,
}

/// One fix from gpsd at `address` before `deadline`.
pub async fn locate(
    address: SocketAddr,
    deadline: Instant,
    timeout_ms: u128,
    cancel: &CancellationToken,
) -> Result<Fix, LocateError> {
    let mut reached = false;
    let watch = tokio::time::timeout_at(deadline, watch(address, &mut reached));
    let done = tokio::select! {
        () = cancel.cancelled() => None,
        done = watch => Some(done),
    };
    match done {
        None => Err(LocateError::Cancelled),
        Some(Ok(fix)) => fix,
        Some(Err(_)) if reached => Err(LocateError::NotAvailable(format!(
            "no fix from {address} within {timeout_ms} ms (locationTimeout): its receiver has no position \
             (no sky view, or no receiver attached; `gpsmon` or `cgps` from gpsd-clients show what it sees)"
        ))),
        Some(Err(_)) => Err(LocateError::NotAvailable(format!(
            "{address} did not accept a connection within {timeout_ms} ms (locationTimeout)"
        ))),
    }
}

async fn watch(address: SocketAddr, reached: &mut bool) -> Result<Fix, LocateError> {
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|error| LocateError::NotAvailable(format!("cannot connect to gpsd at {address} ({error})")))?;
    *reached = true;
    stream.write_all(WATCH).await.map_err(|error| LocateError::Failed(format!("gpsd at {address}: {error}")))?;
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader).take(MAX_LINE + 1).read_until(b'\n', &mut line).await;
        let read = read.map_err(|error| LocateError::Failed(format!("reading gpsd at {address}: {error}")))?;
        if read == 0 {
            return Err(LocateError::Failed(format!("gpsd at {address} closed the connection before a fix")));
        }
        if line.len() as u64 > MAX_LINE {
            return Err(LocateError::Failed(format!(
                "the program at {address} sent a line longer than {MAX_LINE} bytes: it is not gpsd"
            )));
        }
        // Reports of other classes, and any line that is not a report, are passed over.
        let Ok(report) = serde_json::from_slice::<Report>(&line) else { continue };
        if let Some(fix) = fix_from(&report) {
            return Ok(fix);
        }
    }
}

/// A [`Fix`] from a `TPV` report with a 2D/3D fix and a plausible position.
fn fix_from(report: &Report) -> Option<Fix> {
    if report.class != "TPV" || report.mode < 2 {
        return None;
    }
    let (latitude, longitude) = (report.lat?, report.lon?);
    if !(-90.0..=90.0).contains(&latitude) || !(-180.0..=180.0).contains(&longitude) {
        return None;
    }
    let accuracy = report
        .eph
        .or_else(|| Some(report.epx?.max(report.epy?)))
        .filter(|metres| metres.is_finite() && *metres >= 0.0)
        .unwrap_or(0.0);
    let timestamp_ms = report
        .time
        .as_deref()
        .and_then(|time| time::OffsetDateTime::parse(time, &time::format_description::well_known::Rfc3339).ok())
        .map_or_else(super::geoclue::now_ms, |at| (at.unix_timestamp_nanos() / 1_000_000) as i64);
    Some(Fix { latitude, longitude, accuracy, timestamp_ms })
}
