//! The system battery, read from the kernel's power-supply class
//! (`<sysfs>/class/power_supply/*/uevent`).
//!
//! Read directly rather than through UPower because UPower needs a system bus and a daemon that
//! headless machines and containers lack, while the kernel files are always there. Supplies that
//! are not batteries (`Mains`, `USB`) and batteries that power a peripheral rather than the
//! machine (`SCOPE=Device`: mice, headsets) are ignored. Several system batteries are combined
//! into one, as a laptop's own indicator does.

use std::collections::HashMap;
use std::io;
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value, json};

/// Charge state in the upstream legacy vocabulary (`battery.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChargeState {
    Charging,
    Discharging,
    Full,
    /// No battery, `Not charging` (plugged in but held, e.g. by a charge threshold), or `Unknown`.
    Unknown,
}

impl ChargeState {
    fn from_kernel(status: &str) -> ChargeState {
        match status {
            "Charging" => ChargeState::Charging,
            "Discharging" => ChargeState::Discharging,
            "Full" => ChargeState::Full,
            _ => ChargeState::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ChargeState::Charging => "charging",
            ChargeState::Discharging => "discharging",
            ChargeState::Full => "full",
            ChargeState::Unknown => "unknown",
        }
    }
}

/// The machine's battery as `device.status` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Battery {
    pub present: bool,
    pub charge_percent: Option<u8>,
    pub state: ChargeState,
    /// Only while discharging, like upstream.
    pub minutes_remaining: Option<u32>,
}

/// The `battery` section: `{present, chargePercent, isCharging, estimatedMinutesRemaining}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct BatterySection {
    present: bool,
    charge_percent: Option<u8>,
    is_charging: bool,
    estimated_minutes_remaining: Option<u32>,
}

impl Battery {
    pub const ABSENT: Battery =
        Battery { present: false, charge_percent: None, state: ChargeState::Unknown, minutes_remaining: None };

    /// The legacy `battery` object every `device.status` carries; `level` is the charge in percent
    /// (as upstream's Windows node reports it), `null` without a battery.
    pub fn legacy(&self) -> Map<String, Value> {
        let mut legacy = Map::new();
        legacy.insert("level".into(), json!(self.charge_percent));
        legacy.insert("state".into(), json!(self.state.as_str()));
        legacy.insert("lowPowerModeEnabled".into(), json!(false));
        legacy
    }

    /// The `battery` section fields, merged after the legacy ones when the section is requested.
    pub fn section(&self) -> Map<String, Value> {
        let section = BatterySection {
            present: self.present,
            charge_percent: self.charge_percent,
            is_charging: self.state == ChargeState::Charging,
            estimated_minutes_remaining: self.minutes_remaining,
        };
        match serde_json::to_value(section) {
            Ok(Value::Object(fields)) => fields,
            _ => unreachable!("a struct serialises to an object"),
        }
    }
}

/// One power supply's `uevent`, keys without the `POWER_SUPPLY_` prefix.
#[derive(Debug, Default)]
struct Supply {
    fields: HashMap<String, String>,
}

impl Supply {
    fn parse(uevent: &str) -> Supply {
        let fields = uevent
            .lines()
            .filter_map(|line| line.split_once('='))
            .filter_map(|(key, value)| Some((key.strip_prefix("POWER_SUPPLY_")?.to_string(), value.trim().to_string())))
            .collect();
        Supply { fields }
    }

    fn text(&self, key: &str) -> Option<&str> {
        self.fields.get(key).map(String::as_str)
    }

    /// Kernel power-supply numbers are integers in µWh, µAh, µW, µA, seconds or percent.
    fn number(&self, key: &str) -> Option<u64> {
        let value: i64 = self.text(key)?.parse().ok()?;
        // Some drivers report current_now / power_now negative while discharging.
        Some(value.unsigned_abs())
    }

    fn is_system_battery(&self) -> bool {
        self.text("TYPE") == Some("Battery")
            && self.text("SCOPE") != Some("Device")
            && self.number("PRESENT").is_none_or(|present| present == 1)
    }

    fn state(&self) -> ChargeState {
        ChargeState::from_kernel(self.text("STATUS").unwrap_or("Unknown"))
    }
}

/// Reads every supply under `<sysfs_root>/class/power_supply`. A missing directory means no
/// battery; a supply that vanishes while being read (hot unplug) is skipped.
pub fn read(sysfs_root: &Path) -> io::Result<Battery> {
    let class = sysfs_root.join("class/power_supply");
    let entries = match std::fs::read_dir(&class) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Battery::ABSENT),
        Err(e) => return Err(e),
    };
    let mut batteries = Vec::new();
    for entry in entries {
        let uevent = match std::fs::read_to_string(entry?.path().join("uevent")) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let supply = Supply::parse(&uevent);
        if supply.is_system_battery() {
            batteries.push(supply);
        }
    }
    Ok(combine(&batteries))
}

/// Totals of one quantity over all batteries, or `None` unless every battery reports it.
fn total(batteries: &[Supply], key: &str) -> Option<u64> {
    batteries.iter().map(|b| b.number(key)).sum()
}

fn combine(batteries: &[Supply]) -> Battery {
    if batteries.is_empty() {
        return Battery::ABSENT;
    }
    let state = if batteries.iter().any(|b| b.state() == ChargeState::Charging) {
        ChargeState::Charging
    } else if batteries.iter().all(|b| b.state() == ChargeState::Full) {
        ChargeState::Full
    } else if batteries.iter().any(|b| b.state() == ChargeState::Discharging) {
        ChargeState::Discharging
    } else {
        ChargeState::Unknown
    };

    // Drivers report stored charge as energy (µWh) or as charge (µAh); capacity-only drivers
    // give just a percentage.
    let stored_and_full = [("ENERGY_NOW", "ENERGY_FULL"), ("CHARGE_NOW", "CHARGE_FULL")]
        .into_iter()
        .find_map(|(now, full)| Some((total(batteries, now)?, total(batteries, full)?)).filter(|&(_, f)| f > 0));
    let charge_percent = match stored_and_full {
        Some((now, full)) => Some(now as f64 / full as f64 * 100.0),
        None => {
            let sum = total(batteries, "CAPACITY");
            sum.map(|sum| sum as f64 / batteries.len() as f64)
        }
    }
    .map(|percent| percent.round().clamp(0.0, 100.0) as u8);

    let minutes_remaining = (state == ChargeState::Discharging)
        .then(|| {
            let drain =
                [("ENERGY_NOW", "POWER_NOW"), ("CHARGE_NOW", "CURRENT_NOW")].into_iter().find_map(|(stored, rate)| {
                    Some((total(batteries, stored)?, total(batteries, rate)?)).filter(|&(_, r)| r > 0)
                });
            match drain {
                Some((stored, rate)) => Some(stored as f64 / rate as f64 * 60.0),
                None => total(batteries, "TIME_TO_EMPTY_NOW").map(|seconds| seconds as f64 / 60.0),
            }
        })
        .flatten()
        .map(|minutes| minutes as u32);

    Battery { present: true, charge_percent, state, minutes_remaining }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn supply(uevent: &str) -> Supply {
        Supply::parse(uevent)
    }

    #[test]
    fn uevent_lines_are_read_without_the_prefix_and_numbers_as_magnitudes() {
        let parsed = supply("DEVTYPE=power_supply\nPOWER_SUPPLY_NAME=BAT0\nPOWER_SUPPLY_CURRENT_NOW=-1500000\nnoise\n");
        assert_eq!(parsed.text("NAME"), Some("BAT0"));
        assert_eq!(parsed.number("CURRENT_NOW"), Some(1_500_000));
        assert_eq!(parsed.text("DEVTYPE"), None, "only power-supply keys are kept");
    }

    #[test]
    fn only_present_system_batteries_count() {
        assert!(supply("POWER_SUPPLY_TYPE=Battery\nPOWER_SUPPLY_PRESENT=1\n").is_system_battery());
        assert!(supply("POWER_SUPPLY_TYPE=Battery\nPOWER_SUPPLY_SCOPE=System\n").is_system_battery());
        assert!(!supply("POWER_SUPPLY_TYPE=Battery\nPOWER_SUPPLY_PRESENT=0\n").is_system_battery());
        assert!(!supply("POWER_SUPPLY_TYPE=Battery\nPOWER_SUPPLY_SCOPE=Device\n").is_system_battery());
        assert!(!supply("POWER_SUPPLY_TYPE=Mains\nPOWER_SUPPLY_ONLINE=1\n").is_system_battery());
    }

    #[test]
    fn two_batteries_combine_by_stored_energy_and_drain_together() {
        let internal = supply(
            "POWER_SUPPLY_TYPE=Battery\nPOWER_SUPPLY_STATUS=Discharging\nPOWER_SUPPLY_ENERGY_NOW=20000000\n\
             POWER_SUPPLY_ENERGY_FULL=40000000\nPOWER_SUPPLY_POWER_NOW=6000000\nPOWER_SUPPLY_CAPACITY=50\n",
        );
        let external = supply(
            "POWER_SUPPLY_TYPE=Battery\nPOWER_SUPPLY_STATUS=Full\nPOWER_SUPPLY_ENERGY_NOW=20000000\n\
             POWER_SUPPLY_ENERGY_FULL=20000000\nPOWER_SUPPLY_POWER_NOW=0\nPOWER_SUPPLY_CAPACITY=100\n",
        );
        let battery = combine(&[internal, external]);
        // 40 Wh of 60 Wh; 40 Wh at 6 W is 400 minutes.
        assert_eq!(
            battery,
            Battery {
                present: true,
                charge_percent: Some(67),
                state: ChargeState::Discharging,
                minutes_remaining: Some(400)
            }
        );
    }

    #[test]
    fn charge_counters_and_capacity_only_drivers_are_understood() {
        let charge_based = supply(
            "POWER_SUPPLY_TYPE=Battery\nPOWER_SUPPLY_STATUS=Discharging\nPOWER_SUPPLY_CHARGE_NOW=1000000\n\
             POWER_SUPPLY_CHARGE_FULL=4000000\nPOWER_SUPPLY_CURRENT_NOW=-500000\n",
        );
        let battery = combine(&[charge_based]);
        assert_eq!(battery.charge_percent, Some(25));
        assert_eq!(battery.minutes_remaining, Some(120));

        let capacity_only = supply(
            "POWER_SUPPLY_TYPE=Battery\nPOWER_SUPPLY_STATUS=Discharging\nPOWER_SUPPLY_CAPACITY=42\n\
             POWER_SUPPLY_TIME_TO_EMPTY_NOW=5400\n",
        );
        let battery = combine(&[capacity_only]);
        assert_eq!(battery.charge_percent, Some(42));
        assert_eq!(battery.minutes_remaining, Some(90));
    }

    #[test]
    fn not_charging_is_unknown_and_has_no_estimate() {
        let held = supply("POWER_SUPPLY_TYPE=Battery\nPOWER_SUPPLY_STATUS=Not charging\nPOWER_SUPPLY_CAPACITY=80\n");
        let battery = combine(&[held]);
        assert_eq!(battery.state, ChargeState::Unknown);
        assert_eq!(battery.charge_percent, Some(80));
        assert_eq!(battery.minutes_remaining, None);
    }

    #[test]
    fn legacy_and_section_views_share_one_reading() {
        let battery =
            Battery { present: true, charge_percent: Some(55), state: ChargeState::Charging, minutes_remaining: None };
        assert_eq!(
            Value::Object(battery.legacy()),
            json!({"level": 55, "state": "charging", "lowPowerModeEnabled": false})
        );
        assert_eq!(
            Value::Object(battery.section()),
            json!({"present": true, "chargePercent": 55, "isCharging": true, "estimatedMinutesRemaining": null})
        );
        assert_eq!(
            Value::Object(Battery::ABSENT.legacy()),
            json!({"level": null, "state": "unknown", "lowPowerModeEnabled": false})
        );
    }
}
