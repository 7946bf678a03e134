//! `clawmcp token`: where the bearer token lives, and rotating it.

use std::process::ExitCode;

use crate::args::TokenArgs;
use crate::commands::data_dir;
use crate::output;

pub fn run(args: TokenArgs) -> anyhow::Result<ExitCode> {
    let data = data_dir(&args.data_dir)?;
    let path = data.token_path();
    if args.reset {
        data.ensure()?;
        clawmcp_http::token::reset(&path)?;
        output::data(&path.display().to_string());
        output::note("token rotated: a running node uses the new token from its next request; update your MCP clients");
        return Ok(ExitCode::SUCCESS);
    }
    if args.print {
        let token = std::fs::read_to_string(&path).map_err(|e| {
            anyhow::anyhow!(
                "cannot read the token file {}: {e}\nhint: `clawmcp node` creates it on first start",
                path.display()
            )
        })?;
        output::data(token.trim());
        return Ok(ExitCode::SUCCESS);
    }
    output::data(&path.display().to_string());
    if !path.exists() {
        output::note("(not created yet: `clawmcp node` creates it on first start)");
    }
    Ok(ExitCode::SUCCESS)
}
