"""Many machines, one report: the same facts collected on every node, grouped by identical environment.

  fingerprint.py  what makes two environments the same (a view of the facts, and its digest)
  local.py        what one rank collects (its facts; probes on its own GPU)
  distributed.py  the torch.distributed part: ranks post to torchrun's rendezvous store, rank 0 gathers
  model.py        Member, Node, Group, Difference, FleetFinding, FleetReport (frozen data)
  merge.py        members (ranks or snapshot files) -> FleetReport; pure
  checks.py       cross-node checks (EC10xx): torch / CUDA build / NCCL / driver / Python / package versions, GPUs
  checkdoc.py     their documentation (`envcheck rule EC1001`, `envcheck rule --fleet`, docs/fleet.md)
  report.py       text and JSON

The `envcheck fleet` command group (`fleet` and `fleet merge`) is envcheck/cli/fleet_cli.py. Nothing here imports
torch at import time; distributed.py imports it when a torchrun worker connects.
"""
