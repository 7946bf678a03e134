//! `device.status`: the requested sections plus the legacy keys older consumers read.
//!
//! Result keys, in order: `collectedAt`; the requested sections `os`, `cpu`, `memory`, `disk`,
//! `battery`, `networkInterfaces`; then the legacy keys `battery`, `thermal`, `storage`, `network`
//! and `uptimeSeconds`, which are always present.
//!
//! Two names collide with legacy keys. `battery` is merged like upstream does it: the legacy
//! fields `{level, state, lowPowerModeEnabled}` always, the section fields `{present, chargePercent,
//! isCharging, estimatedMinutesRemaining}` after them when the section is requested. The network
//! section cannot merge (both would own `interfaces`, an array of kind names in the legacy key and
//! of interface objects in the section), so it is published as `networkInterfaces` and the legacy
//! `network` key keeps its exact upstream meaning.
//!
//! Each source is read independently; one that fails (or panics) becomes
//! `{"error": "collection failed"}` with the reason in the log, and the rest is still reported.
//! `thermal` is upstream's constant `{"state": "nominal"}`: there is no portable Linux reading of
//! it yet.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};
use sysinfo::{MINIMUM_CPU_UPDATE_INTERVAL, System};

use super::battery::{self, Battery};
use super::network::{self, Interface};
use super::storage::{self, Volume};
use crate::capability::{CapabilityError, InvokeResult, args};

/// Why a source could not be read; logged, never shown to the caller.
type SourceError = Box<dyn std::error::Error + Send + Sync>;
type Reading<T> = Result<T, SourceError>;

/// What a failed section or legacy key becomes (upstream's exact text).
fn collection_failed() -> Value {
    json!({"error": "collection failed"})
}

/// The JSON Schema of `device.status`'s answer (published as its `outputSchema`; the tests
/// validate real answers, every failure path and a fake battery against it). Each section may be
/// the failure object instead; `battery` carries its `error` beside the legacy fields.
pub fn output_schema() -> clawmcp_mcp::Schema {
    let failure = json!({
        "type": "object",
        "properties": {"error": {"const": "collection failed"}},
        "required": ["error"],
        "additionalProperties": false
    });
    let or_failed = |section: Value| json!({"anyOf": [section, failure]});
    let object = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false});
    let all_required = |properties: Value| {
        let required: Vec<String> =
            properties.as_object().into_iter().flat_map(|fields| fields.keys().cloned()).collect();
        let required: Vec<&str> = required.iter().map(String::as_str).collect();
        object(properties.clone(), &required)
    };
    let count = json!({"type": "integer", "minimum": 0});
    let percent = json!({"type": "number", "minimum": 0, "maximum": 100});
    let os = all_required(json!({
        "version": {"type": "string"},
        "architecture": {"type": "string"},
        "machineName": {"type": "string"},
        "uptimeSeconds": count,
        "kernelVersion": {"type": "string"}
    }));
    let cpu = all_required(json!({
        "name": {"type": ["string", "null"]},
        "logicalProcessors": {"type": "integer", "minimum": 1},
        "usagePercent": percent
    }));
    let memory = all_required(json!({"totalBytes": count, "availableBytes": count, "usagePercent": percent}));
    let drive = all_required(json!({
        "name": {"type": "string"},
        "label": {"type": "string"},
        "totalBytes": count,
        "freeBytes": count,
        "usagePercent": percent,
        "format": {"type": "string"}
    }));
    let disk = all_required(json!({"drives": {"type": "array", "items": drive}}));
    let battery = object(
        json!({
            "level": {"type": ["integer", "null"], "minimum": 0, "maximum": 100},
            "state": {"enum": ["charging", "discharging", "full", "unknown"]},
            "lowPowerModeEnabled": {"type": "boolean"},
            "present": {"type": "boolean"},
            "chargePercent": {"type": ["integer", "null"], "minimum": 0, "maximum": 100},
            "isCharging": {"type": "boolean"},
            "estimatedMinutesRemaining": {"type": ["integer", "null"], "minimum": 0},
            "error": {"const": "collection failed"}
        }),
        &["level", "state", "lowPowerModeEnabled"],
    );
    let interface = all_required(json!({
        "name": {"type": "string"},
        "mac": {"type": ["string", "null"]},
        "addresses": {"type": "array", "items": {"type": "string"}},
        "up": {"type": "boolean"},
        "rxBytes": count,
        "txBytes": count
    }));
    let network_interfaces = all_required(json!({"interfaces": {"type": "array", "items": interface}}));
    let storage = all_required(json!({"totalBytes": count, "freeBytes": count, "usedBytes": count}));
    let network = all_required(json!({
        "status": {"enum": ["satisfied", "unsatisfied"]},
        "isExpensive": {"type": "boolean"},
        "isConstrained": {"type": "boolean"},
        "interfaces": {"type": "array", "items": {"enum": network::LEGACY_KINDS}, "uniqueItems": true}
    }));
    object(
        json!({
            "collectedAt": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"},
            "os": or_failed(os),
            "cpu": or_failed(cpu),
            "memory": or_failed(memory),
            "disk": or_failed(disk),
            "battery": battery,
            "networkInterfaces": or_failed(network_interfaces),
            "thermal": all_required(json!({"state": {"const": "nominal"}})),
            "storage": or_failed(storage),
            "network": or_failed(network),
            "uptimeSeconds": {"type": ["integer", "null"], "minimum": 0}
        }),
        &["collectedAt", "battery", "thermal", "storage", "network", "uptimeSeconds"],
    )
    .into()
}

/// The sections `device.status` can be asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Os,
    Cpu,
    Memory,
    Disk,
    Battery,
    Network,
}

impl Section {
    pub const ALL: [Section; 6] =
        [Section::Os, Section::Cpu, Section::Memory, Section::Disk, Section::Battery, Section::Network];
    /// The argument spellings, in [`Section::ALL`] order.
    pub const NAMES: [&'static str; 6] = ["os", "cpu", "memory", "disk", "battery", "network"];

    pub fn name(self) -> &'static str {
        Section::NAMES[self as usize]
    }

    fn from_name(name: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.name().eq_ignore_ascii_case(name))
    }

    /// The `sections` argument (case-insensitive names); absent or empty means every section.
    /// Unknown names are all reported at once, as given.
    pub fn parse_list(args: &Map<String, Value>) -> Result<Vec<Section>, CapabilityError> {
        let requested = args::string_array(args, "sections");
        if requested.is_empty() {
            return Ok(Section::ALL.to_vec());
        }
        let unknown: Vec<&str> =
            requested.iter().map(String::as_str).filter(|name| Section::from_name(name).is_none()).collect();
        if !unknown.is_empty() {
            return Err(CapabilityError::new(format!(
                "Unknown sections: {}. Valid: {}",
                unknown.join(", "),
                Section::NAMES.join(", ")
            )));
        }
        Ok(Section::ALL
            .into_iter()
            .filter(|s| requested.iter().any(|name| s.name().eq_ignore_ascii_case(name)))
            .collect())
    }
}

/// One decimal, as upstream rounds percentages.
pub fn round1(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct OsSection {
    version: String,
    architecture: String,
    machine_name: String,
    uptime_seconds: u64,
    kernel_version: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CpuSection {
    /// `null` when /proc/cpuinfo names no model (some ARM boards).
    name: Option<String>,
    logical_processors: usize,
    usage_percent: f64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct MemorySection {
    total_bytes: u64,
    available_bytes: u64,
    usage_percent: f64,
}

/// Everything read in one pass on the blocking pool (the CPU sample runs beside it).
struct Readings {
    os: Option<Reading<OsSection>>,
    memory: Option<Reading<MemorySection>>,
    volumes: Reading<Vec<Volume>>,
    interfaces: Reading<Vec<Interface>>,
    battery: Reading<Battery>,
    uptime: Reading<u64>,
    home: PathBuf,
}

/// Runs `read`, turning a panic into an error so one broken source cannot take the others down.
fn guarded<T>(read: impl FnOnce() -> Reading<T>) -> Reading<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|_| Err("the reader panicked".into()))
}

/// Runs blocking reads on tokio's blocking pool.
async fn blocking<T: Send + 'static>(read: impl FnOnce() -> Reading<T> + Send + 'static) -> Reading<T> {
    tokio::task::spawn_blocking(move || guarded(read)).await.unwrap_or_else(|e| Err(e.into()))
}

fn read_os() -> Reading<OsSection> {
    Ok(OsSection {
        version: super::info::distribution(),
        architecture: System::cpu_arch(),
        machine_name: System::host_name()?,
        uptime_seconds: System::uptime()?,
        kernel_version: System::kernel_version()?,
    })
}

fn read_memory() -> Reading<MemorySection> {
    let mut system = System::new()?;
    system.refresh_memory();
    let (total, available) = (system.total_memory(), system.available_memory());
    if total == 0 {
        return Err("the kernel reported no memory".into());
    }
    Ok(MemorySection {
        total_bytes: total,
        available_bytes: available,
        usage_percent: round1((1.0 - available as f64 / total as f64) * 100.0),
    })
}

fn read_all(sections: &[Section], sysfs_root: &Path) -> Readings {
    Readings {
        os: sections.contains(&Section::Os).then(|| guarded(read_os)),
        memory: sections.contains(&Section::Memory).then(|| guarded(read_memory)),
        // The legacy keys need volumes, interfaces, battery and uptime on every call.
        volumes: guarded(|| Ok(storage::read()?)),
        interfaces: guarded(|| Ok(network::read(sysfs_root)?)),
        battery: guarded(|| Ok(battery::read(sysfs_root)?)),
        uptime: guarded(|| Ok(System::uptime()?)),
        home: dirs::home_dir().unwrap_or_else(|| PathBuf::from("/")),
    }
}

/// CPU usage is a difference of two /proc/stat samples; sysinfo needs them at least
/// [`MINIMUM_CPU_UPDATE_INTERVAL`] (200 ms on Linux) apart. The wait is async so it costs no
/// thread, and the caller's cancellation drops it.
async fn sample_cpu() -> Reading<CpuSection> {
    let mut system = blocking(|| {
        let mut system = System::new()?;
        system.refresh_cpu_usage();
        Ok(system)
    })
    .await?;
    tokio::time::sleep(MINIMUM_CPU_UPDATE_INTERVAL).await;
    blocking(move || {
        system.refresh_cpu_usage();
        let cpus = system.cpus();
        if cpus.is_empty() {
            return Err("the kernel listed no CPUs".into());
        }
        Ok(CpuSection {
            name: cpus.first().map(|cpu| cpu.brand().trim().to_string()).filter(|name| !name.is_empty()),
            logical_processors: cpus.len(),
            usage_percent: round1(f64::from(system.global_cpu_usage())),
        })
    })
    .await
}

/// A collection timestamp: ISO-8601 UTC with exactly three fractional digits, the fixed width
/// .NET's round-trip format gives upstream (which prints seven).
fn iso8601(at: time::OffsetDateTime) -> String {
    let at = at.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.millisecond()
    )
}

/// Collects the requested sections and every legacy key.
pub async fn collect(sections: Vec<Section>, sysfs_root: PathBuf) -> InvokeResult {
    let collected_at = iso8601(time::OffsetDateTime::now_utc());
    let wants_cpu = sections.contains(&Section::Cpu);
    let cpu = async move {
        match wants_cpu {
            true => Some(sample_cpu().await),
            false => None,
        }
    };
    let requested = sections.clone();
    let readings = async move {
        tokio::task::spawn_blocking(move || read_all(&requested, &sysfs_root))
            .await
            .map_err(|e| CapabilityError::new(format!("device.status: collection failed ({e})")))
    };
    let (cpu, readings) = tokio::join!(cpu, readings);
    Ok(assemble(collected_at, &sections, cpu, readings?))
}

/// A section's value, or the failure object (logged with its reason).
fn reported<T: Serialize>(section: &str, reading: Reading<T>) -> Value {
    match reading.map(|value| serde_json::to_value(value)) {
        Ok(Ok(value)) => value,
        Ok(Err(e)) => failed(section, e.into()),
        Err(e) => failed(section, e),
    }
}

fn failed(section: &str, error: SourceError) -> Value {
    tracing::warn!(section, error = %error, "device.status: collection failed");
    collection_failed()
}

/// Builds the result object from what was read. Pure, so the failure paths are testable.
fn assemble(collected_at: String, sections: &[Section], cpu: Option<Reading<CpuSection>>, readings: Readings) -> Value {
    let wants = |section: Section| sections.contains(&section);
    let mut result = Map::new();
    result.insert("collectedAt".into(), json!(collected_at));
    if let Some(os) = readings.os {
        result.insert("os".into(), reported("os", os));
    }
    if let Some(cpu) = cpu {
        result.insert("cpu".into(), reported("cpu", cpu));
    }
    if let Some(memory) = readings.memory {
        result.insert("memory".into(), reported("memory", memory));
    }
    if wants(Section::Disk) {
        let disk = match &readings.volumes {
            Ok(volumes) => storage::section(volumes),
            Err(e) => failed("disk", e.to_string().into()),
        };
        result.insert("disk".into(), disk);
    }
    let battery = match &readings.battery {
        Ok(battery) => {
            let mut merged = battery.legacy();
            if wants(Section::Battery) {
                merged.extend(battery.section());
            }
            merged
        }
        Err(e) => {
            failed("battery", e.to_string().into());
            let mut fallback = Battery::ABSENT.legacy();
            fallback.insert("error".into(), json!("collection failed"));
            fallback
        }
    };
    result.insert("battery".into(), Value::Object(battery));
    if wants(Section::Network) {
        let interfaces = match &readings.interfaces {
            Ok(interfaces) => network::section(interfaces),
            Err(e) => failed("network", e.to_string().into()),
        };
        result.insert("networkInterfaces".into(), interfaces);
    }
    result.insert("thermal".into(), json!({"state": "nominal"}));
    let storage = match &readings.volumes {
        Ok(volumes) => storage::legacy(volumes, &readings.home),
        Err(_) => collection_failed(),
    };
    result.insert("storage".into(), storage);
    let network = match &readings.interfaces {
        Ok(interfaces) => network::legacy(interfaces),
        Err(_) => collection_failed(),
    };
    result.insert("network".into(), network);
    result.insert("uptimeSeconds".into(), readings.uptime.map_or(Value::Null, |s| json!(s)));
    Value::Object(result)
}

/// The keys of a report with every section, in the order they are written (upstream's order).
#[cfg(test)]
pub(super) const FULL_REPORT_KEYS: [&str; 11] = [
    "collectedAt",
    "os",
    "cpu",
    "memory",
    "disk",
    "battery",
    "networkInterfaces",
    "thermal",
    "storage",
    "network",
    "uptimeSeconds",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn broken<T>() -> Reading<T> {
        Err("injected failure".into())
    }

    fn readings_all_failing() -> Readings {
        Readings {
            os: Some(broken()),
            memory: Some(broken()),
            volumes: broken(),
            interfaces: broken(),
            battery: broken(),
            uptime: broken(),
            home: PathBuf::from("/root"),
        }
    }

    #[test]
    fn every_failing_source_becomes_collection_failed_and_the_keys_stay() {
        let result = assemble("t".into(), &Section::ALL, Some(broken()), readings_all_failing());
        let failed = json!({"error": "collection failed"});
        for key in ["os", "cpu", "memory", "disk", "networkInterfaces", "storage", "network"] {
            assert_eq!(result[key], failed, "{key}");
        }
        assert_eq!(
            result["battery"],
            json!({"level": null, "state": "unknown", "lowPowerModeEnabled": false, "error": "collection failed"})
        );
        assert_eq!(result["thermal"], json!({"state": "nominal"}));
        assert_eq!(result["uptimeSeconds"], Value::Null);
        let keys: Vec<&str> = result.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, FULL_REPORT_KEYS);
    }

    fn validator() -> jsonschema::Validator {
        jsonschema::validator_for(&output_schema().to_value()).expect("the schema compiles")
    }

    #[test]
    fn the_published_schema_accepts_every_failure_path_and_rejects_other_shapes() {
        let validator = validator();
        let all_failed =
            assemble("2026-12-03T12:00:00.000Z".into(), &Section::ALL, Some(broken()), readings_all_failing());
        assert!(validator.is_valid(&all_failed), "{all_failed}");
        let legacy_only = assemble("2026-12-03T12:00:00.000Z".into(), &[], None, readings_all_failing());
        assert!(validator.is_valid(&legacy_only), "{legacy_only}");
        let mut wrong = all_failed.clone();
        wrong.as_object_mut().unwrap().remove("thermal");
        assert!(!validator.is_valid(&wrong), "a legacy key is required");
        let mut wrong = all_failed.clone();
        wrong["cpu"] = json!({"error": "something else"});
        assert!(!validator.is_valid(&wrong), "only upstream's failure text");
        let mut wrong = all_failed;
        wrong["memory"] = json!({"totalBytes": "1", "availableBytes": 1, "usagePercent": 1.0});
        assert!(!validator.is_valid(&wrong), "numbers are numbers");
    }

    #[test]
    fn a_panicking_reader_is_a_failed_reading() {
        let reading: Reading<u8> = guarded(|| panic!("sysinfo bug"));
        assert_eq!(reading.unwrap_err().to_string(), "the reader panicked");
    }

    #[test]
    fn sections_parse_case_insensitively_in_canonical_order_without_duplicates() {
        let args = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(Section::parse_list(&args(json!({}))).unwrap(), Section::ALL);
        assert_eq!(Section::parse_list(&args(json!({"sections": []}))).unwrap(), Section::ALL);
        assert_eq!(
            Section::parse_list(&args(json!({"sections": "cpu"}))).unwrap(),
            Section::ALL,
            "not an array: absent"
        );
        assert_eq!(
            Section::parse_list(&args(json!({"sections": ["NETWORK", " Cpu ", "cpu"]}))).unwrap(),
            [Section::Cpu, Section::Network]
        );
        let error = Section::parse_list(&args(json!({"sections": ["cpu", "GPU", "fans"]}))).unwrap_err();
        assert_eq!(error.message, "Unknown sections: GPU, fans. Valid: os, cpu, memory, disk, battery, network");
    }

    #[test]
    fn timestamps_are_utc_iso8601_with_milliseconds() {
        let at = time::OffsetDateTime::from_unix_timestamp_nanos(1_795_996_113_733_031_999).unwrap();
        assert_eq!(iso8601(at), "2026-11-29T23:48:33.733Z");
        let east = at.to_offset(time::UtcOffset::from_hms(2, 0, 0).unwrap());
        assert_eq!(iso8601(east), "2026-11-29T23:48:33.733Z", "always UTC");
        let whole_second = time::OffsetDateTime::from_unix_timestamp(1_795_996_113).unwrap();
        assert_eq!(iso8601(whole_second), "2026-11-29T23:48:33.000Z", "fixed width");
    }

    #[test]
    fn percentages_round_to_one_decimal() {
        assert_eq!(round1(12.345), 12.3);
        assert_eq!(round1(99.95), 100.0);
        assert_eq!(round1(0.0), 0.0);
    }
}
