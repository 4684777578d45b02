//! What every storage bench measures a run by.

/// `write_bytes` of `/proc/self/io` (0 where unavailable): what reached the block layer.
pub fn process_write_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines().find_map(|line| line.strip_prefix("write_bytes: ")).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// On-CPU nanoseconds of every live thread of this process (0 where unavailable).
pub fn cpu_nanos() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0 };
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// `VmRSS` of `/proc/self/status`, in bytes (0 where unavailable).
#[allow(dead_code)] // Not every bench reads it.
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status.lines().find_map(|line| line.strip_prefix("VmRSS:")).and_then(|v| v.trim().strip_suffix("kB"));
    kib.and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0) * 1024
}
