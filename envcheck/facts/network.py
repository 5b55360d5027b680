"""The machine's network interfaces, by name: what NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME must name.

Collected in envcheck's own process (a machine fact, like NVML: envcheck/sources/live/collect.py), with
`socket.if_nameindex()`: one system call, no subprocess, no address lookups. Interfaces are named as the kernel names
them (`eth0`, `ens5`, `ib0`, `lo`).
"""

from __future__ import annotations

from dataclasses import dataclass

from envcheck.facts._reader import Reader


@dataclass(frozen=True)
class NetworkFacts:
    """The network interfaces of the machine the snapshot was taken on."""

    interfaces: tuple[str, ...]  # sorted names; empty when the machine has none

    @classmethod
    def from_reader(cls, r: Reader) -> NetworkFacts:
        return cls(interfaces=r.texts("interfaces"))
