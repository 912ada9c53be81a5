//! Ports and sockets: the workspace's test support ([`claij_test_support::net`]), with the
//! panics a test wants.

pub(crate) use claij_test_support::net::Listening;

/// `N` distinct ports free on 127.0.0.1.
pub(crate) fn free_ports<const N: usize>() -> [u16; N] {
    claij_test_support::net::free_ports().expect("free loopback ports")
}

/// The sockets process `pid` listens on (TCP) or has bound (UDP).
pub(crate) fn listening_sockets(pid: u32) -> Vec<Listening> {
    claij_test_support::net::listening_sockets(pid).expect("the process's sockets")
}
