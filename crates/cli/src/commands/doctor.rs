//! `clawmcp doctor`: what clawmcp relies on, checked on this machine, section by section. It
//! reports and never fails (exit 0): a missing feature is a finding, not an error. Each section
//! is a function returning its lines, so a new check is one more entry in [`sections`].

use std::process::ExitCode;

use std::sync::Arc;

use clawmcp_node::Registry;
use clawmcp_node::approvals::ExecApprovals;
use clawmcp_node::settings::{DataDir, LiveSettings, Settings};
use clawmcp_node::system::sandbox;

use crate::args::DoctorArgs;
use crate::commands::{data_dir, node_status};
use crate::output;

/// One section of the report: a title and its lines.
struct Section {
    title: &'static str,
    lines: Vec<String>,
}

pub fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let data = data_dir(&args.data_dir)?;
    let report: Vec<String> = sections(&data)
        .into_iter()
        .map(|section| {
            let body: Vec<String> = section.lines.iter().map(|line| format!("  {line}")).collect();
            format!("{}\n{}", section.title, body.join("\n"))
        })
        .collect();
    output::data(&report.join("\n\n"));
    Ok(ExitCode::SUCCESS)
}

fn sections(data: &DataDir) -> Vec<Section> {
    vec![node_tools(data), system_run_sandbox(data)]
}

/// What `clawmcp node` would serve if started from this shell (its environment decides the
/// backends: DISPLAY, PATH), and why each command left out is left out.
fn node_tools(data: &DataDir) -> Section {
    let lines = match LiveSettings::open(data.settings_path()) {
        Ok(settings) => {
            let approvals = Arc::new(ExecApprovals::open(data.exec_approvals_path()));
            let registry = Registry::builtin(Arc::new(settings), approvals);
            node_status::describe_tools(&node_status::ToolsStatus::of(&registry), true)
                .into_iter()
                .map(|line| line.trim_start().to_owned())
                .collect()
        }
        Err(error) => vec![format!("{error}: fix the file (`clawmcp settings` shows it)")],
    };
    Section { title: "node tools (as `clawmcp node` started from this shell would serve them)", lines }
}

/// The sandbox as `settings.json` configures it, and which of its rules hold on this kernel.
fn system_run_sandbox(data: &DataDir) -> Section {
    let path = data.settings_path();
    let lines = match Settings::load(&path) {
        Ok(settings) => sandbox::summary(&settings.system_run_sandbox),
        Err(error) => vec![format!(
            "{error}: a running node treats this as system.run switched off; fix the file (`clawmcp settings` shows it)"
        )],
    };
    Section { title: "system.run sandbox", lines }
}
