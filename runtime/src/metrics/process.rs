//! The Prometheus client libraries' standard `process_*` families, read
//! from `/proc/self` at each scrape (Linux only; elsewhere, none).

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Clock ticks a second in `/proc/*/stat` (`USER_HZ`, `sysconf(_SC_CLK_TCK)`):
/// 100 on every architecture Linux runs containers on.
const TICKS_PER_SECOND: f64 = 100.0;

/// One reading of the process's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessStats {
    /// User and system CPU time, in seconds.
    pub cpu_seconds: f64,
    pub resident_memory_bytes: f64,
    pub virtual_memory_bytes: f64,
    pub open_fds: f64,
    /// The soft limit on open files.
    pub max_fds: f64,
    /// Since the Unix epoch, in seconds.
    pub start_time_seconds: f64,
}

impl ProcessStats {
    /// Reads `/proc/self`; `None` where there is none or it cannot be read.
    pub fn read() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
        let boot = std::fs::read_to_string("/proc/stat").ok()?;
        let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as f64;
        // The fields after the command, which is in parentheses and may hold
        // spaces: state is field 3, so field n is at index n - 3.
        let fields: Vec<&str> = stat
            .get(stat.rfind(')')? + 1..)?
            .split_whitespace()
            .collect();
        let field = |n: usize| fields.get(n - 3)?.parse::<f64>().ok();
        let cpu_seconds = (field(14)? + field(15)?) / TICKS_PER_SECOND;
        let started_after_boot = field(22)? / TICKS_PER_SECOND;
        let boot_time: f64 = boot
            .lines()
            .find_map(|line| line.strip_prefix("btime "))?
            .trim()
            .parse()
            .ok()?;
        let kib = |key: &str| -> Option<f64> {
            let value = status.lines().find_map(|line| line.strip_prefix(key))?;
            let kib: f64 = value.split_whitespace().next()?.parse().ok()?;
            Some(kib * 1024.0)
        };
        let max_fds = limits
            .lines()
            .find_map(|line| line.strip_prefix("Max open files"))?
            .split_whitespace()
            .next()
            .and_then(|soft| soft.parse().ok())
            // `unlimited`
            .unwrap_or(f64::INFINITY);
        Some(Self {
            cpu_seconds,
            resident_memory_bytes: kib("VmRSS:")?,
            virtual_memory_bytes: kib("VmSize:")?,
            open_fds,
            max_fds,
            start_time_seconds: boot_time + started_after_boot,
        })
    }
}

/// The collector of the `process_*` families, registered once per
/// registry.
#[derive(Debug, Default)]
pub struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(stats) = ProcessStats::read() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(stats.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            None,
            cpu.metric_type(),
        )?)?;
        let gauges = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                stats.resident_memory_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                stats.virtual_memory_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors",
                stats.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors",
                stats.max_fds,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                stats.start_time_seconds,
            ),
        ];
        for (name, help, value) in gauges {
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        Ok(())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn reads_plausible_figures_of_this_process() {
        let stats = ProcessStats::read().expect("/proc/self is readable on Linux");
        let file = std::fs::File::open("/proc/self/stat").expect("open a file");
        let with_one_more = ProcessStats::read().expect("read again");
        drop(file);
        assert!(stats.resident_memory_bytes > 1024.0 * 1024.0, "{stats:?}");
        assert!(
            stats.virtual_memory_bytes >= stats.resident_memory_bytes,
            "{stats:?}"
        );
        assert!(stats.open_fds >= 3.0, "{stats:?}");
        assert!(
            with_one_more.open_fds > stats.open_fds,
            "an open file counts: {stats:?} then {with_one_more:?}"
        );
        assert!(stats.max_fds >= stats.open_fds, "{stats:?}");
        assert!(stats.cpu_seconds >= 0.0, "{stats:?}");
        let now = jiff::Timestamp::now().as_second() as f64;
        assert!(
            stats.start_time_seconds <= now + 1.0 && stats.start_time_seconds > now - 86_400.0,
            "started within the last day: {stats:?}, now {now}"
        );
    }
}
