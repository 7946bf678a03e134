//! `device.*` through the capability interface, against this machine: every field's presence and
//! type (cross-checked with /proc where the kernel states the same fact), section selection,
//! batteries from fixture sysfs trees in kernel format and from the real /sys, and the network
//! section inside a fresh network namespace holding a veth pair.

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use clawmcp_mcp::CallContext;
use serde_json::{Value, json};

use super::*;
use crate::capability::{Capability, InvokeRequest, InvokeResult};

async fn call(capability: &DeviceCapability, command: &str, args: Value) -> InvokeResult {
    call_with(capability, command, args, CallContext::detached()).await
}

async fn call_with(capability: &DeviceCapability, command: &str, args: Value, ctx: CallContext) -> InvokeResult {
    let request = InvokeRequest {
        id: "test".into(),
        command: command.into(),
        args: args.as_object().expect("object args").clone(),
        session_key: None,
        caller: crate::capability::Caller::Mcp,
    };
    let output = capability.invoke(request, ctx).await?;
    let answer = output.payload.expect("device commands answer JSON");
    assert_fits_published_schema(capability, command, &answer);
    Ok(answer)
}

/// Every answer a test sees must fit the command's published `outputSchema` (clients of MCP
/// 2025-06-18 and later validate `structuredContent` against it).
fn assert_fits_published_schema(capability: &DeviceCapability, command: &str, answer: &Value) {
    let commands = capability.commands();
    let tool = commands.iter().find(|c| c.name() == command).expect("a published command").tool();
    let schema =
        tool.output_schema.as_ref().unwrap_or_else(|| panic!("{command} publishes an outputSchema")).to_value();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> =
        validator.iter_errors(answer).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{command}'s answer does not fit its outputSchema: {errors:?}\n{answer:#}");
}

async fn status(capability: &DeviceCapability, sections: &[&str]) -> Value {
    call(capability, "device.status", json!({"sections": sections})).await.expect("device.status succeeds")
}

fn keys(value: &Value) -> Vec<&str> {
    value.as_object().unwrap_or_else(|| panic!("not an object: {value}")).keys().map(String::as_str).collect()
}

fn proc_text(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}")).trim().to_string()
}

fn assert_percent(value: &Value, what: &str) {
    let percent = value.as_f64().unwrap_or_else(|| panic!("{what} is not a number: {value}"));
    assert!((0.0..=100.0).contains(&percent), "{what} out of range: {percent}");
}

#[tokio::test]
async fn device_info_reports_every_field_with_its_linux_meaning() {
    let info = call(&DeviceCapability::new(), "device.info", json!({})).await.unwrap();
    assert_eq!(
        keys(&info),
        [
            "deviceName",
            "modelIdentifier",
            "systemName",
            "systemVersion",
            "kernelVersion",
            "appVersion",
            "appBuild",
            "locale",
            "architecture"
        ]
    );
    assert_eq!(info["deviceName"], json!(proc_text("/proc/sys/kernel/hostname")));
    assert_eq!(info["kernelVersion"], json!(proc_text("/proc/sys/kernel/osrelease")));
    assert_eq!(info["systemName"], json!("Linux"));
    assert_eq!(info["appVersion"], json!(env!("CARGO_PKG_VERSION")));
    assert_eq!(info["appBuild"], info["appVersion"]);
    assert_eq!(info["architecture"], json!(std::env::consts::ARCH));

    let os_release = proc_text("/etc/os-release");
    let distribution_name =
        os_release.lines().find_map(|l| l.strip_prefix("NAME=")).expect("os-release has NAME").trim_matches('"');
    let system_version = info["systemVersion"].as_str().unwrap();
    assert!(system_version.starts_with(distribution_name), "{system_version} vs {distribution_name}");

    let expected_model = std::fs::read_to_string("/sys/class/dmi/id/product_name")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    assert_eq!(info["modelIdentifier"], json!(expected_model));

    let locale = info["locale"].as_str().unwrap();
    let (language, rest) = locale.split_once('-').unwrap_or((locale, ""));
    assert!((2..=3).contains(&language.len()) && language.chars().all(|c| c.is_ascii_lowercase()), "{locale}");
    assert!(rest.split('-').all(|s| s.is_empty() || s.len() >= 2), "{locale}");
}

#[tokio::test]
async fn device_status_without_arguments_reports_every_section_and_legacy_key() {
    let report = call(&DeviceCapability::new(), "device.status", json!({})).await.unwrap();
    assert_eq!(keys(&report), super::status::FULL_REPORT_KEYS);
    let collected_at = report["collectedAt"].as_str().unwrap();
    assert!(collected_at.ends_with('Z') && collected_at.contains('T'), "{collected_at}");

    let os = &report["os"];
    assert_eq!(keys(os), ["version", "architecture", "machineName", "uptimeSeconds", "kernelVersion"]);
    assert!(os["version"].as_str().is_some_and(|v| !v.is_empty()));
    assert_eq!(os["architecture"], json!(std::env::consts::ARCH));
    assert_eq!(os["machineName"], json!(proc_text("/proc/sys/kernel/hostname")));
    assert_eq!(os["kernelVersion"], json!(proc_text("/proc/sys/kernel/osrelease")));
    let proc_uptime: f64 = proc_text("/proc/uptime").split_whitespace().next().unwrap().parse().unwrap();
    let uptime = os["uptimeSeconds"].as_u64().expect("integer uptime");
    assert!(uptime <= proc_uptime.ceil() as u64, "{uptime} > {proc_uptime}");
    assert!(report["uptimeSeconds"].as_u64().is_some_and(|legacy| legacy >= uptime));

    let cpu = &report["cpu"];
    assert_eq!(keys(cpu), ["name", "logicalProcessors", "usagePercent"]);
    assert!(cpu["name"].is_string() || cpu["name"].is_null());
    let processors = proc_text("/proc/cpuinfo").lines().filter(|l| l.starts_with("processor")).count();
    assert_eq!(cpu["logicalProcessors"], json!(processors));
    assert_percent(&cpu["usagePercent"], "cpu.usagePercent");

    let memory = &report["memory"];
    assert_eq!(keys(memory), ["totalBytes", "availableBytes", "usagePercent"]);
    let mem_total_kib: u64 = proc_text("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert_eq!(memory["totalBytes"], json!(mem_total_kib * 1024));
    assert!(memory["availableBytes"].as_u64().unwrap() <= mem_total_kib * 1024);
    assert_percent(&memory["usagePercent"], "memory.usagePercent");

    let drives = report["disk"]["drives"].as_array().expect("drives array");
    assert!(drives.iter().any(|d| d["name"] == json!("/")), "the root file system is a drive: {drives:?}");
    for drive in drives {
        assert_eq!(keys(drive), ["name", "label", "totalBytes", "freeBytes", "usagePercent", "format"]);
        assert!(drive["totalBytes"].as_u64().unwrap() >= drive["freeBytes"].as_u64().unwrap());
        assert_percent(&drive["usagePercent"], "drive usagePercent");
        let format = drive["format"].as_str().unwrap();
        assert!(!["proc", "sysfs", "tmpfs", "devtmpfs", "cgroup", "cgroup2", "devpts"].contains(&format), "{drive}");
    }

    assert_eq!(
        keys(&report["battery"]),
        [
            "level",
            "state",
            "lowPowerModeEnabled",
            "present",
            "chargePercent",
            "isCharging",
            "estimatedMinutesRemaining"
        ]
    );

    let interfaces = report["networkInterfaces"]["interfaces"].as_array().expect("interfaces array");
    for interface in interfaces {
        assert_eq!(keys(interface), ["name", "mac", "addresses", "up", "rxBytes", "txBytes"]);
        assert!(interface["mac"].is_null() || interface["mac"].as_str().is_some_and(|m| m.len() == 17));
        assert!(interface["addresses"].as_array().unwrap().iter().all(|a| a.as_str().is_some_and(|a| a.contains('/'))));
        assert!(interface["up"].is_boolean() && interface["rxBytes"].is_u64() && interface["txBytes"].is_u64());
    }
    let kernel_interfaces: BTreeSet<String> = std::fs::read_dir("/sys/class/net")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let reported: BTreeSet<String> = interfaces.iter().map(|i| i["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(reported, kernel_interfaces);

    assert_eq!(report["thermal"], json!({"state": "nominal"}));
    let storage = &report["storage"];
    assert_eq!(keys(storage), ["totalBytes", "freeBytes", "usedBytes"]);
    assert_eq!(
        storage["usedBytes"].as_u64().unwrap(),
        storage["totalBytes"].as_u64().unwrap() - storage["freeBytes"].as_u64().unwrap()
    );
    let network = &report["network"];
    assert_eq!(keys(network), ["status", "isExpensive", "isConstrained", "interfaces"]);
    assert!(["satisfied", "unsatisfied"].contains(&network["status"].as_str().unwrap()));
    assert_eq!((&network["isExpensive"], &network["isConstrained"]), (&json!(false), &json!(false)));
    for kind in network["interfaces"].as_array().unwrap() {
        assert!(["wired", "wifi", "cellular", "other"].contains(&kind.as_str().unwrap()), "{kind}");
    }
}

#[tokio::test]
async fn only_the_requested_sections_are_reported_beside_the_legacy_keys() {
    let report = status(&DeviceCapability::new(), &["MEMORY", "Disk"]).await;
    assert_eq!(
        keys(&report),
        ["collectedAt", "memory", "disk", "battery", "thermal", "storage", "network", "uptimeSeconds"]
    );
    assert_eq!(keys(&report["battery"]), ["level", "state", "lowPowerModeEnabled"], "legacy fields only");
}

#[tokio::test]
async fn unknown_sections_are_rejected_with_the_valid_list() {
    let error =
        call(&DeviceCapability::new(), "device.status", json!({"sections": ["cpu", "gpu", "Fans"]})).await.unwrap_err();
    assert_eq!(error.message, "Unknown sections: gpu, Fans. Valid: os, cpu, memory, disk, battery, network");
}

#[tokio::test]
async fn a_cancelled_call_returns_at_once_without_a_result() {
    let ctx = CallContext::detached();
    ctx.cancel.cancel();
    let error =
        call_with(&DeviceCapability::new(), "device.status", json!({"sections": ["cpu"]}), ctx).await.unwrap_err();
    assert_eq!(error.message, "device.status cancelled");
}

#[test]
fn both_commands_are_published_read_only_with_schemas() {
    let capability = DeviceCapability::new();
    let commands = capability.commands();
    let names: Vec<&str> = commands.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["device.info", "device.status"]);
    for command in &commands {
        let tool = command.tool();
        assert_eq!(tool.annotations, Some(ToolAnnotations::READ_ONLY), "{}", tool.name);
        assert!(tool.description.len() > 40, "{}", tool.name);
        assert_eq!(tool.input_schema.to_value()["type"], json!("object"));
    }
    assert_eq!(
        commands[1].tool().input_schema.to_value()["properties"]["sections"]["items"]["enum"],
        json!(["os", "cpu", "memory", "disk", "battery", "network"])
    );
}

/// A sysfs tree laid out like the kernel's: supplies live under `devices/` and
/// `class/power_supply/<name>` links to them.
struct FakeSysfs {
    root: tempfile::TempDir,
}

impl FakeSysfs {
    fn new() -> FakeSysfs {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("class/power_supply")).unwrap();
        FakeSysfs { root }
    }

    fn supply(self, name: &str, uevent: &str) -> FakeSysfs {
        let device = self.root.path().join("devices/platform").join(name).join("power_supply").join(name);
        std::fs::create_dir_all(&device).unwrap();
        std::fs::write(device.join("uevent"), uevent).unwrap();
        std::os::unix::fs::symlink(&device, self.root.path().join("class/power_supply").join(name)).unwrap();
        self
    }

    async fn battery(&self) -> Value {
        status(&DeviceCapability::with_sysfs_root(self.root.path()), &["battery"]).await["battery"].clone()
    }
}

const AC_ONLINE: &str = "DEVTYPE=power_supply\nPOWER_SUPPLY_NAME=AC\nPOWER_SUPPLY_TYPE=Mains\nPOWER_SUPPLY_ONLINE=1\n";
const AC_OFFLINE: &str = "DEVTYPE=power_supply\nPOWER_SUPPLY_NAME=AC\nPOWER_SUPPLY_TYPE=Mains\nPOWER_SUPPLY_ONLINE=0\n";
/// A wireless mouse's battery: a battery, but not the machine's.
const MOUSE: &str = "DEVTYPE=power_supply\nPOWER_SUPPLY_NAME=hidpp_battery_0\nPOWER_SUPPLY_TYPE=Battery\n\
                     POWER_SUPPLY_SCOPE=Device\nPOWER_SUPPLY_STATUS=Discharging\nPOWER_SUPPLY_PRESENT=1\n\
                     POWER_SUPPLY_CAPACITY=5\n";

/// A ThinkPad battery's uevent with the given status and stored energy (µWh).
fn thinkpad_battery(status: &str, energy_now: u64, power_now: u64) -> String {
    format!(
        "DEVTYPE=power_supply\nPOWER_SUPPLY_NAME=BAT0\nPOWER_SUPPLY_TYPE=Battery\nPOWER_SUPPLY_STATUS={status}\n\
         POWER_SUPPLY_PRESENT=1\nPOWER_SUPPLY_TECHNOLOGY=Li-poly\nPOWER_SUPPLY_CYCLE_COUNT=41\n\
         POWER_SUPPLY_VOLTAGE_MIN_DESIGN=15440000\nPOWER_SUPPLY_VOLTAGE_NOW=16317000\n\
         POWER_SUPPLY_POWER_NOW={power_now}\nPOWER_SUPPLY_ENERGY_FULL_DESIGN=57000000\n\
         POWER_SUPPLY_ENERGY_FULL=52340000\nPOWER_SUPPLY_ENERGY_NOW={energy_now}\nPOWER_SUPPLY_CAPACITY=0\n\
         POWER_SUPPLY_CAPACITY_LEVEL=Normal\nPOWER_SUPPLY_MODEL_NAME=5B10W13975\nPOWER_SUPPLY_MANUFACTURER=SMP\n\
         POWER_SUPPLY_SERIAL_NUMBER= 1234\n"
    )
}

#[tokio::test]
async fn a_discharging_battery_reports_charge_and_time_left() {
    let sysfs = FakeSysfs::new()
        .supply("AC", AC_OFFLINE)
        .supply("BAT0", &thinkpad_battery("Discharging", 42_380_000, 7_443_000))
        .supply("hidpp_battery_0", MOUSE);
    // 42.38 of 52.34 Wh is 81 %; at 7.443 W it lasts 341.6 minutes.
    assert_eq!(
        sysfs.battery().await,
        json!({
            "level": 81, "state": "discharging", "lowPowerModeEnabled": false,
            "present": true, "chargePercent": 81, "isCharging": false, "estimatedMinutesRemaining": 341
        })
    );
}

#[tokio::test]
async fn a_charging_battery_reports_charging_without_an_estimate() {
    let sysfs =
        FakeSysfs::new().supply("AC", AC_ONLINE).supply("BAT0", &thinkpad_battery("Charging", 26_170_000, 25_000_000));
    assert_eq!(
        sysfs.battery().await,
        json!({
            "level": 50, "state": "charging", "lowPowerModeEnabled": false,
            "present": true, "chargePercent": 50, "isCharging": true, "estimatedMinutesRemaining": null
        })
    );
}

#[tokio::test]
async fn a_full_battery_reports_full() {
    let sysfs = FakeSysfs::new().supply("AC", AC_ONLINE).supply("BAT0", &thinkpad_battery("Full", 52_340_000, 0));
    assert_eq!(
        sysfs.battery().await,
        json!({
            "level": 100, "state": "full", "lowPowerModeEnabled": false,
            "present": true, "chargePercent": 100, "isCharging": false, "estimatedMinutesRemaining": null
        })
    );
}

fn no_battery() -> Value {
    json!({
        "level": null, "state": "unknown", "lowPowerModeEnabled": false,
        "present": false, "chargePercent": null, "isCharging": false, "estimatedMinutesRemaining": null
    })
}

#[tokio::test]
async fn a_desktop_with_only_mains_power_and_a_mouse_has_no_battery() {
    let sysfs = FakeSysfs::new().supply("AC", AC_ONLINE).supply("hidpp_battery_0", MOUSE);
    assert_eq!(sysfs.battery().await, no_battery());
    let without_power_supply_class = tempfile::tempdir().unwrap();
    let capability = DeviceCapability::with_sysfs_root(without_power_supply_class.path());
    assert_eq!(status(&capability, &["battery"]).await["battery"], no_battery());
}

#[tokio::test]
async fn the_real_sys_reports_exactly_the_batteries_the_kernel_lists() {
    // This machine's /sys/class/power_supply is empty, so this checks the real no-battery path; on
    // a laptop it checks the opposite, from the same kernel files.
    let kernel_has_battery = std::fs::read_dir("/sys/class/power_supply")
        .map(|entries| {
            entries.filter_map(Result::ok).any(|e| {
                let uevent = std::fs::read_to_string(e.path().join("uevent")).unwrap_or_default();
                uevent.contains("POWER_SUPPLY_TYPE=Battery") && !uevent.contains("POWER_SUPPLY_SCOPE=Device")
            })
        })
        .unwrap_or(false);
    let battery = status(&DeviceCapability::new(), &["battery"]).await["battery"].clone();
    assert_eq!(battery["present"], json!(kernel_has_battery));
    if !kernel_has_battery {
        assert_eq!(battery, no_battery());
    }
}

/// Set by [`the_network_section_reports_exactly_the_links_of_a_fresh_namespace`] when it re-runs
/// this test binary inside the namespace: where the probe writes what it saw.
const NETNS_REPORT_ENV: &str = "CLAWMCP_DEVICE_NETNS_REPORT";
const PROBE_TEST: &str = "device::tests::the_network_section_lists_the_loopback_interface";

/// Runs with every test run on the host, and is the probe the namespace test runs inside its
/// namespace (where it also saves its report).
#[tokio::test]
async fn the_network_section_lists_the_loopback_interface() {
    let report = status(&DeviceCapability::new(), &["network"]).await;
    let interfaces = report["networkInterfaces"]["interfaces"].as_array().expect("interfaces");
    let lo = interfaces.iter().find(|i| i["name"] == json!("lo")).unwrap_or_else(|| panic!("no lo in {interfaces:?}"));
    assert_eq!(lo["mac"], Value::Null, "loopback has no hardware address");
    assert!(lo["addresses"].as_array().unwrap().contains(&json!("127.0.0.1/8")), "{lo}");
    assert_eq!(lo["up"], json!(true));
    if let Some(path) = std::env::var_os(NETNS_REPORT_ENV) {
        std::fs::write(path, report.to_string()).expect("write the probe report");
    }
}

fn require(binary: &str, package: &str) {
    let found =
        std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(binary).is_file()));
    assert!(found, "`{binary}` is not installed; this test needs the Debian package `{package}`");
}

/// A network namespace with `lo` up and a veth pair `v0` (10.99.0.1/24) – `v1`, both up.
/// Deleted when dropped, however the test ends.
struct VethNamespace {
    name: String,
}

impl VethNamespace {
    fn create() -> VethNamespace {
        require("ip", "iproute2");
        let mut suffix = [0u8; 4];
        getrandom::fill(&mut suffix).unwrap();
        let name = format!("clawmcp-device-{}", suffix.iter().map(|b| format!("{b:02x}")).collect::<String>());
        let added = Command::new("ip").args(["netns", "add", &name]).output().expect("run ip");
        assert!(
            added.status.success(),
            "cannot create a network namespace ({}); this test needs root (CAP_SYS_ADMIN) and iproute2's `ip netns`",
            String::from_utf8_lossy(&added.stderr).trim()
        );
        let namespace = VethNamespace { name };
        namespace.ip(&["link", "add", "v0", "type", "veth", "peer", "name", "v1"]);
        namespace.ip(&["addr", "add", "10.99.0.1/24", "dev", "v0"]);
        for link in ["lo", "v0", "v1"] {
            namespace.ip(&["link", "set", link, "up"]);
        }
        namespace
    }

    fn ip(&self, args: &[&str]) -> String {
        let output = Command::new("ip").args(["-n", &self.name]).args(args).output().expect("run ip");
        assert!(output.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    }

    /// `ip -j link show` for one link.
    fn link(&self, name: &str) -> Value {
        let links: Value = serde_json::from_str(&self.ip(&["-j", "link", "show", "dev", name])).unwrap();
        links[0].clone()
    }

    /// The kernel moves a link's operational state to UP asynchronously (linkwatch); wait for it
    /// so the probe sees the settled state.
    fn wait_until_up(&self, links: &[&str]) {
        let started = Instant::now();
        while !links.iter().all(|l| self.link(l)["operstate"] == json!("UP")) {
            assert!(started.elapsed() < Duration::from_secs(10), "links {links:?} never came up");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for VethNamespace {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).status();
    }
}

#[test]
fn the_network_section_reports_exactly_the_links_of_a_fresh_namespace() {
    let namespace = VethNamespace::create();
    namespace.wait_until_up(&["v0", "v1"]);
    let v0_mac = namespace.link("v0")["address"].as_str().unwrap().to_string();

    let report_path = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    std::fs::remove_file(&report_path).unwrap();
    let probe = Command::new("ip")
        .args(["netns", "exec", &namespace.name])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", PROBE_TEST, "--test-threads=1"])
        .env(NETNS_REPORT_ENV, &report_path)
        .output()
        .expect("run the probe");
    let probe_log = format!("{}{}", String::from_utf8_lossy(&probe.stdout), String::from_utf8_lossy(&probe.stderr));
    assert!(probe.status.success(), "the probe failed inside the namespace:\n{probe_log}");
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(&report_path)
            .unwrap_or_else(|e| panic!("the probe test did not run inside the namespace ({e}):\n{probe_log}")),
    )
    .unwrap();

    let interfaces = report["networkInterfaces"]["interfaces"].as_array().unwrap();
    let names: Vec<&str> = interfaces.iter().map(|i| i["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["lo", "v0", "v1"], "the namespace holds exactly these links");
    let by_name = |name: &str| interfaces.iter().find(|i| i["name"] == json!(name)).unwrap();

    let v0 = by_name("v0");
    assert_eq!(v0["mac"], json!(v0_mac));
    assert_eq!(v0["up"], json!(true));
    let v0_addresses = v0["addresses"].as_array().unwrap();
    assert_eq!(v0_addresses.first(), Some(&json!("10.99.0.1/24")), "{v0}");
    assert!(v0_addresses.iter().skip(1).all(|a| a.as_str().unwrap().starts_with("fe80:")), "{v0}");

    let v1 = by_name("v1");
    assert_eq!(v1["up"], json!(true));
    assert!(v1["mac"].as_str().is_some_and(|m| m != v0_mac));
    assert!(!v1["addresses"].as_array().unwrap().iter().any(|a| a.as_str().unwrap().contains('.')), "{v1}");

    // veth is an Ethernet-type link, and v0's address reaches beyond the link.
    assert_eq!(
        report["network"],
        json!({"status": "satisfied", "isExpensive": false, "isConstrained": false, "interfaces": ["wired"]})
    );
    drop(namespace);
}

#[test]
fn an_unknown_command_is_refused() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let error = runtime.block_on(call(&DeviceCapability::new(), "device.reboot", json!({}))).unwrap_err();
    assert_eq!(error.message, "Unknown command: device.reboot");
}
