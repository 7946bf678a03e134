//! `clawmcp settings`: show or change `settings.json`. Changes are saved atomically; a running
//! node reads the file on its next call, so a switch applies without a restart, and only once
//! it is safely on disk. A value is checked by the same rules the node reads the file with, so
//! nothing is saved that would switch `system.run` off as unreadable.

use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;

use clawmcp_node::settings::Settings;

use crate::args::{SettingKey, SettingsAction, SettingsArgs};
use crate::commands::data_dir;
use crate::exit::UsageError;
use crate::output;

pub fn run(args: SettingsArgs) -> anyhow::Result<ExitCode> {
    let data = data_dir(&args.data_dir)?;
    let path = data.settings_path();
    let mut settings = Settings::load(&path)?;
    match args.action.unwrap_or(SettingsAction::Show) {
        SettingsAction::Show => {
            output::data(&serde_json::to_string_pretty(&settings)?);
            if !path.exists() {
                output::note(&format!("({} does not exist yet: these are the defaults)", path.display()));
            }
        }
        SettingsAction::Set { key, value } => {
            apply(&mut settings, key, &value).map_err(UsageError)?;
            settings.system_run_sandbox.validate().map_err(UsageError)?;
            data.ensure()?;
            settings.save(&path)?;
            output::note(&format!("saved {}: {}", path.display(), effect(key, &settings)));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// When and how a running node applies `key` (as now saved in `settings`): every key applies
/// without a restart, but not all at the same moment, and a user should not have to guess.
fn effect(key: SettingKey, settings: &Settings) -> &'static str {
    match key {
        SettingKey::EnableNodeMode if settings.enable_node_mode => {
            "a running node joins the gateway as a node within seconds, with its saved gateway URL and credentials \
             (`clawmcp node status` shows the state; `clawmcp doctor` why it cannot)"
        }
        SettingKey::EnableNodeMode => "a running node leaves the gateway within seconds",
        SettingKey::EnableMcpServer if settings.enable_mcp_server => {
            "a running node serves MCP on its port again within seconds"
        }
        SettingKey::EnableMcpServer => {
            "a running node stops serving MCP on its port within seconds (node mode, if on, stays)"
        }
        SettingKey::NodeSystemRunEnabled
        | SettingKey::NodeScreenEnabled
        | SettingKey::NodeCameraEnabled
        | SettingKey::NodeClipboardReadEnabled
        | SettingKey::NodeLocationEnabled
        | SettingKey::NodeSttEnabled
        | SettingKey::NodeCanvasEnabled
        | SettingKey::AppConnectionChangesEnabled => {
            "a running node applies it at once: its next tools/list and its next call see it"
        }
        SettingKey::NodeFileRoots => "a running node applies it to its next file.*, dir.* and fs.listDir call",
        SettingKey::NodeCanvasTrustedOrigins => {
            "a running node applies it to the next page canvas.present or canvas.navigate loads"
        }
        SettingKey::NodeTtsProvider => "a running node applies it to its next tts.speak and tts.status",
        SettingKey::SandboxEnabled
        | SettingKey::SandboxNetwork
        | SettingKey::SandboxWritablePaths
        | SettingKey::SandboxMemoryMib
        | SettingKey::SandboxMaxProcesses
        | SettingKey::SandboxCpuSeconds => "a running node applies it to its next system.run",
    }
}

/// Sets `key` to `value` as text from the command line.
pub(crate) fn apply(settings: &mut Settings, key: SettingKey, value: &str) -> Result<(), String> {
    let sandbox = &mut settings.system_run_sandbox;
    match key {
        SettingKey::EnableNodeMode => settings.enable_node_mode = switch(value)?,
        SettingKey::EnableMcpServer => settings.enable_mcp_server = switch(value)?,
        SettingKey::NodeSystemRunEnabled => settings.node_system_run_enabled = switch(value)?,
        SettingKey::NodeScreenEnabled => settings.node_screen_enabled = switch(value)?,
        SettingKey::NodeCameraEnabled => settings.node_camera_enabled = switch(value)?,
        SettingKey::NodeClipboardReadEnabled => settings.node_clipboard_read_enabled = switch(value)?,
        SettingKey::NodeLocationEnabled => settings.node_location_enabled = switch(value)?,
        SettingKey::NodeSttEnabled => settings.node_stt_enabled = switch(value)?,
        SettingKey::NodeCanvasEnabled => settings.node_canvas_enabled = switch(value)?,
        SettingKey::AppConnectionChangesEnabled => settings.app_connection_changes_enabled = switch(value)?,
        SettingKey::NodeFileRoots => {
            let roots: Vec<PathBuf> = paths(value);
            clawmcp_node::settings::validate_file_roots(&roots)?;
            settings.node_file_roots = (!roots.is_empty()).then_some(roots);
        }
        SettingKey::NodeCanvasTrustedOrigins => {
            settings.node_canvas_trusted_origins = clawmcp_node::settings::parse_canvas_origins(value)?;
        }
        SettingKey::NodeTtsProvider => {
            settings.node_tts_provider = match value.trim() {
                "" => None,
                name => Some(clawmcp_node::tts::providers::Provider::parse(name)?.id().to_owned()),
            };
        }
        SettingKey::SandboxEnabled => sandbox.enabled = switch(value)?,
        SettingKey::SandboxNetwork => sandbox.network = switch(value)?,
        SettingKey::SandboxWritablePaths => {
            sandbox.writable_paths = paths(value);
        }
        SettingKey::SandboxMemoryMib => sandbox.memory_mib = limit(value)?,
        SettingKey::SandboxMaxProcesses => sandbox.max_processes = limit(value)?,
        SettingKey::SandboxCpuSeconds => sandbox.cpu_seconds = limit(value)?,
    }
    Ok(())
}

/// The value of `key` in `settings`, as JSON.
pub(crate) fn value_of(settings: &Settings, key: SettingKey) -> serde_json::Value {
    let sandbox = &settings.system_run_sandbox;
    match key {
        SettingKey::EnableNodeMode => settings.enable_node_mode.into(),
        SettingKey::EnableMcpServer => settings.enable_mcp_server.into(),
        SettingKey::NodeSystemRunEnabled => settings.node_system_run_enabled.into(),
        SettingKey::NodeScreenEnabled => settings.node_screen_enabled.into(),
        SettingKey::NodeCameraEnabled => settings.node_camera_enabled.into(),
        SettingKey::NodeClipboardReadEnabled => settings.node_clipboard_read_enabled.into(),
        SettingKey::NodeLocationEnabled => settings.node_location_enabled.into(),
        SettingKey::NodeSttEnabled => settings.node_stt_enabled.into(),
        SettingKey::NodeCanvasEnabled => settings.node_canvas_enabled.into(),
        SettingKey::AppConnectionChangesEnabled => settings.app_connection_changes_enabled.into(),
        SettingKey::NodeFileRoots => settings
            .node_file_roots
            .as_ref()
            .map(|roots| roots.iter().map(|path| path.display().to_string()).collect::<Vec<_>>())
            .into(),
        SettingKey::NodeTtsProvider => settings.node_tts_provider.clone().into(),
        SettingKey::NodeCanvasTrustedOrigins => settings.node_canvas_trusted_origins.clone().into(),
        SettingKey::SandboxEnabled => sandbox.enabled.into(),
        SettingKey::SandboxNetwork => sandbox.network.into(),
        SettingKey::SandboxWritablePaths => {
            sandbox.writable_paths.iter().map(|path| path.display().to_string()).collect::<Vec<_>>().into()
        }
        SettingKey::SandboxMemoryMib => sandbox.memory_mib.into(),
        SettingKey::SandboxMaxProcesses => sandbox.max_processes.into(),
        SettingKey::SandboxCpuSeconds => sandbox.cpu_seconds.into(),
    }
}

/// A colon-separated list of paths; empty parts are skipped.
fn paths(value: &str) -> Vec<PathBuf> {
    value.split(':').filter(|part| !part.is_empty()).map(PathBuf::from).collect()
}

fn switch(value: &str) -> Result<bool, String> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(format!("`{other}` is not a switch value; use true or false")),
    }
}

/// A positive number, or `none` for no limit.
fn limit<T: FromStr>(value: &str) -> Result<Option<T>, String> {
    match value {
        "none" => Ok(None),
        number => number
            .parse()
            .map(Some)
            .map_err(|_| format!("`{number}` is not a limit; use a whole number, or none for no limit")),
    }
}
