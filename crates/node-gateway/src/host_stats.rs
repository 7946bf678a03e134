//! `node.host.stats`: the figures the real node host reports after connecting, shown by the
//! gateway in `node.list` (`hostStats`). Exactly its keys: `cpuCount`, `loadAverage` (1/5/15
//! minutes), `memoryTotalBytes`, `memoryFreeBytes`, `diskTotalBytes`, `diskAvailableBytes`.

use serde_json::{Value, json};

/// The event name.
pub const HOST_STATS: &str = "node.host.stats";

/// A fresh reading. A figure the OS does not give reads 0 rather than failing the event.
pub fn read() -> Value {
    let cpu_count = std::thread::available_parallelism().map_or(0, usize::from);
    let load = sysinfo::System::load_average().map_or([0.0; 3], |load| [load.one, load.five, load.fifteen]);
    let (memory_total, memory_free) = match sysinfo::System::new() {
        Ok(mut system) => {
            system.refresh_memory();
            (system.total_memory(), system.available_memory())
        }
        Err(_) => (0, 0),
    };
    let (disk_total, disk_available) = match nix::sys::statvfs::statvfs("/") {
        Ok(stat) => {
            let fragment = stat.fragment_size();
            let total = stat.blocks().saturating_mul(fragment);
            (total, stat.blocks_available().saturating_mul(fragment))
        }
        Err(_) => (0, 0),
    };
    json!({
        "cpuCount": cpu_count,
        "loadAverage": load,
        "memoryTotalBytes": memory_total,
        "memoryFreeBytes": memory_free,
        "diskTotalBytes": disk_total,
        "diskAvailableBytes": disk_available,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reading_has_the_real_node_hosts_keys_with_real_figures() {
        let stats = read();
        let keys: Vec<&str> = stats.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["cpuCount", "loadAverage", "memoryTotalBytes", "memoryFreeBytes", "diskTotalBytes", "diskAvailableBytes"]
        );
        assert!(stats["cpuCount"].as_u64().unwrap() >= 1);
        assert!(stats["memoryTotalBytes"].as_u64().unwrap() >= stats["memoryFreeBytes"].as_u64().unwrap());
        assert!(stats["diskTotalBytes"].as_u64().unwrap() >= stats["diskAvailableBytes"].as_u64().unwrap());
        assert!(stats["diskTotalBytes"].as_u64().unwrap() > 0, "/ has a size");
        assert_eq!(stats["loadAverage"].as_array().unwrap().len(), 3);
    }
}
