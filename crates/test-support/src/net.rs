//! Ports and sockets for tests that start real servers: free ports on loopback, and the sockets a
//! process listens on (Linux, read from `/proc`), to check that a server a test starts is reachable
//! from this machine only.
//!
//! ```
//! use claij_test_support::net::{free_ports, parse_proc_address};
//!
//! let [a, b] = free_ports()?;
//! assert_ne!(a, b);
//! let (address, port) = parse_proc_address("0100007F:1F90").expect("a /proc/net address");
//! # if cfg!(target_endian = "little") {
//! assert_eq!((address.to_string(), port), ("127.0.0.1".to_owned(), 8080));
//! # }
//! # Ok::<(), std::io::Error>(())
//! ```

use std::collections::HashSet;
use std::net::{IpAddr, TcpListener};

/// `N` distinct ports free on 127.0.0.1 (held together while they are picked, then released).
///
/// # Errors
///
/// Binding a loopback port failed.
pub fn free_ports<const N: usize>() -> std::io::Result<[u16; N]> {
    let listeners = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()?;
    let mut ports = [0; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener.local_addr()?.port();
    }
    Ok(ports)
}

/// A socket a process has open for others to reach: a listening TCP socket, or a bound UDP one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Listening {
    /// A UDP socket (else TCP).
    pub udp: bool,
    /// The address it is bound to.
    pub address: IpAddr,
    /// Its port.
    pub port: u16,
}

impl Listening {
    /// On 127.0.0.0/8 or ::1 (or ::ffff:127.x.y.z).
    pub fn is_loopback(&self) -> bool {
        match self.address {
            IpAddr::V4(v4) => v4.is_loopback(),
            IpAddr::V6(v6) => {
                v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
            }
        }
    }
}

/// The TCP sockets process `pid` listens on and the UDP sockets it has bound: its descriptors'
/// socket inodes looked up in `/proc/net/{tcp,tcp6,udp,udp6}`, sorted.
///
/// # Errors
///
/// The process's descriptors cannot be read (it is gone, or not this user's), or a line of
/// `/proc/net` has an address this does not understand.
pub fn listening_sockets(pid: u32) -> std::io::Result<Vec<Listening>> {
    let inodes: HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))?
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
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            if !inodes.contains(*inode) || (!udp && *state != "0A") {
                continue;
            }
            let (address, port) = parse_proc_address(local).ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("/proc/net/{table}: an address of an unknown form: {local}"),
                )
            })?;
            found.push(Listening { udp, address, port });
        }
    }
    found.sort();
    Ok(found)
}

/// A `/proc/net` address, `0100007F:1F90` or a 32-digit IPv6 form: hex words of the address as the
/// kernel holds them in memory (this machine's byte order), then the port. `None` for another form.
pub fn parse_proc_address(text: &str) -> Option<(IpAddr, u16)> {
    let (address, port) = text.split_once(':')?;
    if address.len() % 8 != 0 || !address.is_ascii() {
        return None;
    }
    let mut bytes = Vec::with_capacity(16);
    for word in 0..address.len() / 8 {
        let word = u32::from_str_radix(address.get(word * 8..word * 8 + 8)?, 16).ok()?;
        bytes.extend_from_slice(&word.to_ne_bytes());
    }
    let ip = match bytes.len() {
        4 => IpAddr::from(<[u8; 4]>::try_from(bytes.as_slice()).ok()?),
        16 => IpAddr::from(<[u8; 16]>::try_from(bytes.as_slice()).ok()?),
        _ => return None,
    };
    Some((ip, u16::from_str_radix(port, 16).ok()?))
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    /// The `/proc/net` address forms the loopback checks read.
    #[test]
    fn proc_addresses_parse_to_what_the_kernel_means() {
        if cfg!(target_endian = "big") {
            return;
        }
        let check = |text: &str, ip: IpAddr, port: u16| {
            assert_eq!(parse_proc_address(text), Some((ip, port)), "{text}");
        };
        check("0100007F:B3BB", Ipv4Addr::LOCALHOST.into(), 0xB3BB);
        check("00000000:1F90", Ipv4Addr::UNSPECIFIED.into(), 8080);
        check(
            "00000000000000000000000001000000:0050",
            Ipv6Addr::LOCALHOST.into(),
            80,
        );
        check(
            "0000000000000000FFFF00000100007F:B3BC",
            "::ffff:127.0.0.1".parse().unwrap(),
            0xB3BC,
        );
        for bad in [
            "",
            "0100007F",
            "0100007:1F90",
            "0100007F:XYZ",
            "GG00007F:1F90",
        ] {
            assert_eq!(parse_proc_address(bad), None, "{bad}");
        }
    }

    #[test]
    fn loopback_includes_mapped_v4() {
        let at = |address: &str| Listening {
            udp: false,
            address: address.parse().unwrap(),
            port: 1,
        };
        assert!(at("127.0.0.1").is_loopback());
        assert!(at("::1").is_loopback());
        assert!(at("::ffff:127.0.0.2").is_loopback());
        assert!(!at("0.0.0.0").is_loopback());
        assert!(!at("::").is_loopback());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_listener_of_this_process_is_found_on_loopback() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let found = listening_sockets(std::process::id()).unwrap();
        assert!(
            found
                .iter()
                .any(|l| !l.udp && l.port == port && l.is_loopback()),
            "{found:?}"
        );
    }
}
