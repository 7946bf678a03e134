//! `device.info`: static facts about this machine and this program.
//!
//! The upstream fields are kept (`deviceName`, `modelIdentifier`, `systemName`, `systemVersion`,
//! `appVersion`, `appBuild`, `locale`) with their Linux meaning, plus `kernelVersion` and
//! `architecture`, which on Linux say more than the distribution name alone.

use std::path::{Path, PathBuf};

use serde::Serialize;
use sysinfo::System;

use crate::capability::{CapabilityError, InvokeResult};

/// The locale when the environment names none or only the POSIX one (`C`, `POSIX`).
const DEFAULT_LOCALE: &str = "en-US";
/// Environment variables naming the message locale, strongest first (POSIX precedence).
const LOCALE_VARIABLES: [&str; 3] = ["LC_ALL", "LC_MESSAGES", "LANG"];

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct DeviceInfo {
    device_name: String,
    model_identifier: String,
    system_name: &'static str,
    system_version: String,
    kernel_version: String,
    app_version: &'static str,
    app_build: &'static str,
    locale: String,
    architecture: String,
}

/// The JSON Schema of `device.info`'s answer (published as its `outputSchema`; the tests
/// validate real answers against it).
pub fn output_schema() -> clawmcp_mcp::Schema {
    const FIELDS: [&str; 9] = [
        "deviceName",
        "modelIdentifier",
        "systemName",
        "systemVersion",
        "kernelVersion",
        "appVersion",
        "appBuild",
        "locale",
        "architecture",
    ];
    let properties: serde_json::Map<String, serde_json::Value> =
        FIELDS.iter().map(|field| (field.to_string(), serde_json::json!({"type": "string"}))).collect();
    serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": FIELDS,
        "additionalProperties": false
    })
    .into()
}

/// Collects `device.info` on the blocking pool (it reads `/etc/os-release`, `/proc` and sysfs).
pub async fn collect(sysfs_root: PathBuf) -> InvokeResult {
    tokio::task::spawn_blocking(move || {
        let info = read(&sysfs_root, |name| std::env::var(name).ok());
        serde_json::to_value(info).expect("plain data serialises")
    })
    .await
    .map_err(|e| {
        tracing::warn!(error = %e, "device.info collection failed");
        CapabilityError::new("device.info: collection failed")
    })
}

fn read(sysfs_root: &Path, env: impl Fn(&str) -> Option<String>) -> DeviceInfo {
    let architecture = System::cpu_arch();
    DeviceInfo {
        device_name: System::host_name().unwrap_or_else(|_| "localhost".to_string()),
        model_identifier: model_identifier(sysfs_root).unwrap_or_else(|| architecture.clone()),
        system_name: system_name(),
        system_version: distribution(),
        kernel_version: System::kernel_version().unwrap_or_else(|_| "unknown".to_string()),
        app_version: env!("CARGO_PKG_VERSION"),
        app_build: env!("CARGO_PKG_VERSION"),
        locale: locale(env),
        architecture,
    }
}

/// The OS family, spelled the way its vendor does.
fn system_name() -> &'static str {
    match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "macOS",
        "windows" => "Windows",
        "freebsd" => "FreeBSD",
        other => other,
    }
}

/// Distribution name and version from os-release, e.g. `Debian GNU/Linux 12`.
pub fn distribution() -> String {
    match (System::name(), System::os_version()) {
        (Ok(name), Ok(version)) if !version.is_empty() => format!("{name} {version}"),
        (Ok(name), _) => name,
        (Err(_), _) => system_name().to_string(),
    }
}

/// The machine model from DMI (`product_name`), absent on VMs without DMI and most ARM boards.
pub fn model_identifier(sysfs_root: &Path) -> Option<String> {
    let name = std::fs::read_to_string(sysfs_root.join("class/dmi/id/product_name")).ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// The user's message locale as a BCP 47 tag (`de_DE.UTF-8` becomes `de-DE`).
pub fn locale(env: impl Fn(&str) -> Option<String>) -> String {
    let raw = LOCALE_VARIABLES.iter().filter_map(|name| env(name)).find(|value| !value.is_empty());
    raw.as_deref().and_then(bcp47).unwrap_or_else(|| DEFAULT_LOCALE.to_string())
}

/// Converts a POSIX locale name (`language[_territory][.codeset][@modifier]`) to BCP 47. `None`
/// for the POSIX locale and for names that are not of that form.
fn bcp47(posix: &str) -> Option<String> {
    let name = posix.split(['.', '@']).next().unwrap_or_default();
    let mut parts = name.split(['_', '-']);
    let language = parts.next()?;
    if !(2..=3).contains(&language.len()) || !language.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let mut tag = language.to_ascii_lowercase();
    for part in parts {
        let subtag = match part.len() {
            // Script, e.g. `Latn`.
            4 if part.chars().all(|c| c.is_ascii_alphabetic()) => {
                let mut chars = part.chars();
                let first = chars.next()?.to_ascii_uppercase();
                std::iter::once(first).chain(chars.map(|c| c.to_ascii_lowercase())).collect()
            }
            // Region: two letters or three digits (`419`).
            2 if part.chars().all(|c| c.is_ascii_alphabetic()) => part.to_ascii_uppercase(),
            3 if part.chars().all(|c| c.is_ascii_digit()) => part.to_string(),
            _ => return None,
        };
        tag.push('-');
        tag.push_str(&subtag);
    }
    Some(tag)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn posix_locale_names_become_bcp47_tags() {
        let cases = [
            ("de_DE.UTF-8", "de-DE"),
            ("pt_BR", "pt-BR"),
            ("sr_RS@latin", "sr-RS"),
            ("en", "en"),
            ("zh_Hant_TW.UTF-8", "zh-Hant-TW"),
            ("es_419.UTF-8", "es-419"),
            ("FR_fr", "fr-FR"),
            ("C.UTF-8", DEFAULT_LOCALE),
            ("POSIX", DEFAULT_LOCALE),
            ("C", DEFAULT_LOCALE),
        ];
        for (posix, expected) in cases {
            assert_eq!(locale(env_of(&[("LANG", posix)])), expected, "{posix}");
        }
    }

    #[test]
    fn lc_all_beats_lc_messages_beats_lang_and_empty_values_are_skipped() {
        assert_eq!(locale(env_of(&[("LC_ALL", "fr_FR.UTF-8"), ("LC_MESSAGES", "de_DE"), ("LANG", "it_IT")])), "fr-FR");
        assert_eq!(locale(env_of(&[("LC_ALL", ""), ("LC_MESSAGES", "de_DE"), ("LANG", "it_IT")])), "de-DE");
        assert_eq!(locale(env_of(&[("LANG", "it_IT")])), "it-IT");
        assert_eq!(locale(env_of(&[])), DEFAULT_LOCALE);
    }

    #[test]
    fn the_model_comes_from_dmi_when_the_firmware_provides_it() {
        let sysfs = tempfile::tempdir().unwrap();
        assert_eq!(model_identifier(sysfs.path()), None);
        let dmi = sysfs.path().join("class/dmi/id");
        std::fs::create_dir_all(&dmi).unwrap();
        std::fs::write(dmi.join("product_name"), "  \n").unwrap();
        assert_eq!(model_identifier(sysfs.path()), None, "blank means unknown");
        std::fs::write(dmi.join("product_name"), "21HM004GGE\n").unwrap();
        assert_eq!(model_identifier(sysfs.path()).as_deref(), Some("21HM004GGE"));

        let info = read(sysfs.path(), env_of(&[]));
        assert_eq!(info.model_identifier, "21HM004GGE");
        let bare = tempfile::tempdir().unwrap();
        assert_eq!(read(bare.path(), env_of(&[])).model_identifier, info.architecture);
    }
}
