//! `clawmcp settings`: show or change `settings.json`. Changes are saved atomically; a running
//! node reads the file on its next call, so a switch applies without a restart, and only once
//! it is safely on disk.

use std::process::ExitCode;

use clawmcp_node::settings::Settings;

use crate::args::{SettingKey, SettingsAction, SettingsArgs, Switch};
use crate::commands::data_dir;
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
            let on = matches!(value, Switch::True);
            match key {
                SettingKey::EnableNodeMode => settings.enable_node_mode = on,
                SettingKey::EnableMcpServer => settings.enable_mcp_server = on,
                SettingKey::NodeSystemRunEnabled => settings.node_system_run_enabled = on,
            }
            data.ensure()?;
            settings.save(&path)?;
            output::note(&format!("saved {}", path.display()));
        }
    }
    Ok(ExitCode::SUCCESS)
}
