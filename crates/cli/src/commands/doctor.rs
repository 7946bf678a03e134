//! `clawmcp doctor`: what clawmcp relies on, checked on this machine, section by section. It
//! reports and never fails (exit 0): a missing feature is a finding, not an error. Each section
//! is a function returning its lines, so a new check is one more entry in [`sections`].

use std::process::ExitCode;

use clawmcp_node::settings::{DataDir, Settings};
use clawmcp_node::system::sandbox;

use crate::args::DoctorArgs;
use crate::commands::data_dir;
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
    vec![system_run_sandbox(data)]
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
