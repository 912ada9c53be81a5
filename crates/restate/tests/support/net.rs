//! Ports and sockets: free ports on loopback, and the sockets a process listens on (Linux, from
//! `/proc`).

use std::collections::HashSet;
use std::net::{IpAddr, TcpListener};

/// `N` distinct ports free on 127.0.0.1 (held together while they are picked, then released).
pub(crate) fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: Vec<TcpListener> = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    std::array::from_fn(|i| listeners[i].local_addr().unwrap().port())
}

/// A socket a process has open for others to reach: a listening TCP socket, or a bound UDP one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Listening {
    pub(crate) udp: bool,
    pub(crate) address: IpAddr,
    pub(crate) port: u16,
}

impl Listening {
    /// On 127.0.0.0/8 or ::1 (or ::ffff:127.x.y.z).
    pub(crate) fn is_loopback(&self) -> bool {
        match self.address {
            IpAddr::V4(v4) => v4.is_loopback(),
            IpAddr::V6(v6) => {
                v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
            }
        }
    }
}

/// The TCP sockets process `pid` listens on and the UDP sockets it has bound: its descriptors'
/// socket inodes looked up in `/proc/net/{tcp,tcp6,udp,udp6}`.
pub(crate) fn listening_sockets(pid: u32) -> Vec<Listening> {
    let inodes: HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            Some(
                target
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_owned(),
            )
        })
        .collect();
    let mut found = Vec::new();
    for (table, udp) in [
        ("tcp", false),
        ("tcp6", false),
        ("udp", true),
        ("udp6", true),
    ] {
        let text = std::fs::read_to_string(format!("/proc/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sl, local_address, rem_address, st (0A: LISTEN), ..., inode (the tenth).
            if fields.len() < 10 || !inodes.contains(fields[9]) || (!udp && fields[3] != "0A") {
                continue;
            }
            let (address, port) = parse_proc_address(fields[1]);
            found.push(Listening { udp, address, port });
        }
    }
    found.sort();
    found
}

/// `0100007F:1F90` or a 32-digit IPv6 form: hex words of the address as the kernel holds them in
/// memory, then the port.
pub(crate) fn parse_proc_address(text: &str) -> (IpAddr, u16) {
    let (address, port) = text.split_once(':').unwrap();
    let bytes: Vec<u8> = (0..address.len() / 8)
        .flat_map(|word| {
            u32::from_str_radix(&address[word * 8..word * 8 + 8], 16)
                .unwrap()
                .to_ne_bytes()
        })
        .collect();
    let ip = match <[u8; 4]>::try_from(bytes.as_slice()) {
        Ok(v4) => IpAddr::from(v4),
        Err(_) => IpAddr::from(<[u8; 16]>::try_from(bytes.as_slice()).unwrap()),
    };
    (ip, u16::from_str_radix(port, 16).unwrap())
}
