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
        // A running node checks the file at most once per `RECHECK_AFTER`: waiting it out here
        // means that once this command returns, the old token admits nothing.
        std::thread::sleep(clawmcp_http::token::RECHECK_AFTER);
        output::data(&path.display().to_string());
        output::note("token rotated: a running node uses the new token from its next request; update your MCP clients");
        return Ok(ExitCode::SUCCESS);
    }
    if args.print {
        let token = clawmcp_http::token::read_token_file(&path)
            .map_err(|e| anyhow::anyhow!("cannot read the token file {}: {e}", path.display()))?
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "the token file {} does not exist yet\nhint: `clawmcp node` creates it on first start",
                    path.display()
                )
            })?;
        if !clawmcp_http::token::is_well_formed(&token) {
            anyhow::bail!(
                "the token file {} does not hold a clawmcp token ({} base64url characters)\nhint: `clawmcp node` \
                 replaces it on start, or run `clawmcp token --reset`",
                path.display(),
                clawmcp_http::token::TOKEN_CHARS
            );
        }
        output::data(&token);
        return Ok(ExitCode::SUCCESS);
    }
    output::data(&path.display().to_string());
    if !path.exists() {
        output::note("(not created yet: `clawmcp node` creates it on first start)");
    }
    Ok(ExitCode::SUCCESS)
}
