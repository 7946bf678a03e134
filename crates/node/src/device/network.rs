//! Network interfaces: the `network` section (every interface with its addresses and counters)
//! and the legacy `network` summary (reachability and the kinds of links that are up).
//!
//! Names, MACs, addresses, states and counters come from `sysinfo`; the link kind (wired, Wi-Fi,
//! cellular) is not in sysinfo, so it is read from `<sysfs>/class/net/<name>` the way
//! NetworkManager's own classification starts: the ARP hardware type and the `DEVTYPE` the
//! driver announces.

use std::net::IpAddr;
use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};
use sysinfo::{InterfaceOperationalState, Networks};

/// ARP hardware types from `<linux/if_arp.h>` that decide a link's kind.
const ARPHRD_ETHER: u32 = 1;
const ARPHRD_PPP: u32 = 512;
const ARPHRD_LOOPBACK: u32 = 772;

/// What kind of link an interface is, in the legacy vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    Loopback,
    Wired,
    Wifi,
    Cellular,
    Other,
}

impl LinkKind {
    fn legacy_name(self) -> Option<&'static str> {
        // Every name here is in LEGACY_KINDS (the published schema lists them).
        match self {
            LinkKind::Loopback => None,
            LinkKind::Wired => Some("wired"),
            LinkKind::Wifi => Some("wifi"),
            LinkKind::Cellular => Some("cellular"),
            LinkKind::Other => Some("other"),
        }
    }

    /// Classifies from the sysfs view: `type` (ARP hardware type), `uevent` (`DEVTYPE=`), and the
    /// `wireless`/`phy80211` entries only Wi-Fi devices have. Unreadable means `Other`.
    pub fn classify(sysfs_root: &Path, name: &str) -> LinkKind {
        let device = sysfs_root.join("class/net").join(name);
        let arp_type = std::fs::read_to_string(device.join("type")).ok().and_then(|t| t.trim().parse::<u32>().ok());
        let devtype = std::fs::read_to_string(device.join("uevent"))
            .ok()
            .and_then(|uevent| uevent.lines().find_map(|l| l.strip_prefix("DEVTYPE=").map(str::to_string)));
        let wireless = device.join("wireless").exists() || device.join("phy80211").exists();
        match (arp_type, devtype.as_deref()) {
            (Some(ARPHRD_LOOPBACK), _) => LinkKind::Loopback,
            (None, _) if name == "lo" => LinkKind::Loopback,
            (_, Some("wlan")) => LinkKind::Wifi,
            _ if wireless => LinkKind::Wifi,
            (_, Some("wwan")) | (Some(ARPHRD_PPP), _) => LinkKind::Cellular,
            (Some(ARPHRD_ETHER), _) => LinkKind::Wired,
            _ => LinkKind::Other,
        }
    }
}

/// One interface as the `network` section reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Interface {
    pub name: String,
    /// `null` for links without a hardware address (loopback, tunnels).
    pub mac: Option<String>,
    /// CIDR notation, IPv4 first.
    pub addresses: Vec<String>,
    /// The link can pass packets now (RFC 2863 operational state `up`, or `unknown` as the
    /// loopback and many virtual drivers report).
    pub up: bool,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    #[serde(skip)]
    pub kind: LinkKind,
    #[serde(skip)]
    pub routable: bool,
}

/// The link kinds the legacy `network.interfaces` can name.
pub const LEGACY_KINDS: [&str; 4] = ["wired", "wifi", "cellular", "other"];

/// Whether the kernel's operational state means the link passes packets.
pub fn is_operational(state: InterfaceOperationalState) -> bool {
    matches!(state, InterfaceOperationalState::Up | InterfaceOperationalState::Unknown)
}

/// An address that reaches beyond the link: not loopback, not link-local (169.254/16, fe80::/10).
pub fn is_routable(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => !v4.is_loopback() && !v4.is_link_local() && !v4.is_unspecified(),
        IpAddr::V6(v6) => !v6.is_loopback() && !v6.is_unicast_link_local() && !v6.is_unspecified(),
    }
}

/// Every interface of this network namespace, sorted by name.
pub fn read(sysfs_root: &Path) -> Result<Vec<Interface>, sysinfo::Error> {
    let networks = Networks::new_with_refreshed_list()?;
    let mut interfaces: Vec<Interface> = networks
        .iter()
        .map(|(name, data)| {
            let name = name.to_string_lossy().into_owned();
            let mut networks = data.ip_networks().to_vec();
            networks.sort();
            let mac = data.mac_address();
            Interface {
                kind: LinkKind::classify(sysfs_root, &name),
                name,
                mac: (!mac.is_unspecified()).then(|| mac.to_string()),
                addresses: networks.iter().map(ToString::to_string).collect(),
                up: is_operational(data.operational_state()),
                rx_bytes: data.total_received(),
                tx_bytes: data.total_transmitted(),
                routable: networks.iter().any(|n| is_routable(n.addr)),
            }
        })
        .collect();
    interfaces.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(interfaces)
}

/// The `network` section: `{interfaces: [...]}`.
pub fn section(interfaces: &[Interface]) -> Value {
    json!({"interfaces": interfaces})
}

/// The legacy summary. `status` is `satisfied` when a non-loopback link is up with a routable
/// address (the closest Linux reading of "the network is available"); `interfaces` lists the
/// kinds of those up links, each once.
pub fn legacy(interfaces: &[Interface]) -> Value {
    let live = || interfaces.iter().filter(|i| i.up && i.kind != LinkKind::Loopback);
    let mut kinds: Vec<&str> = Vec::new();
    for kind in live().filter_map(|i| i.kind.legacy_name()) {
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    let satisfied = live().any(|i| i.routable);
    json!({
        "status": if satisfied { "satisfied" } else { "unsatisfied" },
        "isExpensive": false,
        "isConstrained": false,
        "interfaces": kinds,
    })
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn fake_device(root: &Path, name: &str, arp_type: &str, uevent: &str) -> std::path::PathBuf {
        let device = root.join("class/net").join(name);
        fs::create_dir_all(&device).unwrap();
        fs::write(device.join("type"), arp_type).unwrap();
        fs::write(device.join("uevent"), uevent).unwrap();
        device
    }

    #[test]
    fn links_are_classified_like_the_kernel_describes_them() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        fake_device(root, "lo", "772\n", "INTERFACE=lo\nIFINDEX=1\n");
        fake_device(root, "enp3s0", "1\n", "INTERFACE=enp3s0\nIFINDEX=2\n");
        fake_device(root, "wlp2s0", "1\n", "DEVTYPE=wlan\nINTERFACE=wlp2s0\n");
        fs::create_dir(fake_device(root, "wlan1", "1\n", "INTERFACE=wlan1\n").join("phy80211")).unwrap();
        fake_device(root, "wwan0", "65534\n", "DEVTYPE=wwan\nINTERFACE=wwan0\n");
        fake_device(root, "ppp0", "512\n", "INTERFACE=ppp0\n");
        fake_device(root, "wg0", "65534\n", "DEVTYPE=wireguard\nINTERFACE=wg0\n");

        let kinds: Vec<LinkKind> = ["lo", "enp3s0", "wlp2s0", "wlan1", "wwan0", "ppp0", "wg0", "missing"]
            .iter()
            .map(|name| LinkKind::classify(root, name))
            .collect();
        use LinkKind::*;
        assert_eq!(kinds, [Loopback, Wired, Wifi, Wifi, Cellular, Cellular, Other, Other]);
    }

    #[test]
    fn operational_states_that_pass_packets() {
        assert!(is_operational(InterfaceOperationalState::Up));
        assert!(is_operational(InterfaceOperationalState::Unknown));
        assert!(!is_operational(InterfaceOperationalState::Down));
        assert!(!is_operational(InterfaceOperationalState::LowerLayerDown));
        assert!(!is_operational(InterfaceOperationalState::Dormant));
    }

    #[test]
    fn link_local_and_loopback_addresses_do_not_make_the_network_available() {
        for address in ["127.0.0.1", "169.254.10.1", "::1", "fe80::1", "0.0.0.0"] {
            assert!(!is_routable(address.parse().unwrap()), "{address}");
        }
        for address in ["10.99.0.1", "192.0.2.2", "2001:db8::1", "fd00::1"] {
            assert!(is_routable(address.parse().unwrap()), "{address}");
        }
    }

    fn interface(name: &str, kind: LinkKind, up: bool, routable: bool) -> Interface {
        Interface { name: name.into(), mac: None, addresses: vec![], up, rx_bytes: 0, tx_bytes: 0, kind, routable }
    }

    #[test]
    fn the_legacy_summary_counts_live_non_loopback_links_once() {
        let interfaces = [
            interface("lo", LinkKind::Loopback, true, false),
            interface("eth0", LinkKind::Wired, true, true),
            interface("eth1", LinkKind::Wired, true, false),
            interface("wlan0", LinkKind::Wifi, false, true),
        ];
        assert_eq!(
            legacy(&interfaces),
            json!({"status": "satisfied", "isExpensive": false, "isConstrained": false, "interfaces": ["wired"]})
        );
        let only_link_local =
            [interface("lo", LinkKind::Loopback, true, false), interface("eth1", LinkKind::Wired, true, false)];
        assert_eq!(legacy(&only_link_local)["status"], json!("unsatisfied"));
        assert_eq!(legacy(&[])["interfaces"], json!([]));
    }

    #[test]
    fn the_section_hides_classification_details() {
        let shown = section(&[interface("eth0", LinkKind::Wired, true, true)]);
        assert_eq!(
            shown,
            json!({"interfaces": [{"name": "eth0", "mac": null, "addresses": [], "up": true, "rxBytes": 0, "txBytes": 0}]})
        );
    }
}
