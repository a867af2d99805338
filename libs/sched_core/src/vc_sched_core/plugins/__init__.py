"""In-tree plugins, one module each, returned as a registry value (no import-time registration)."""

from __future__ import annotations

from vc_sched_core.framework.interfaces import PluginFactory
from vc_sched_core.framework.registry import Registry
from vc_sched_core.plugins import (
    binpack,
    capacity,
    conformance,
    deviceshare,
    drf,
    gang,
    network_topology,
    nodeorder,
    overcommit,
    pdb,
    predicates,
    priority,
    proportion,
    resourcequota,
    sla,
)


def in_tree_plugins() -> Registry[PluginFactory]:
    return Registry(
        {
            priority.NAME: priority.PriorityPlugin,
            gang.NAME: gang.GangPlugin,
            conformance.NAME: conformance.ConformancePlugin,
            drf.NAME: drf.DrfPlugin,
            proportion.NAME: proportion.ProportionPlugin,
            capacity.NAME: capacity.CapacityPlugin,
            predicates.NAME: predicates.PredicatesPlugin,
            nodeorder.NAME: nodeorder.NodeOrderPlugin,
            binpack.NAME: binpack.BinpackPlugin,
            overcommit.NAME: overcommit.OvercommitPlugin,
            sla.NAME: sla.SlaPlugin,
            pdb.NAME: pdb.PdbPlugin,
            resourcequota.NAME: resourcequota.ResourceQuotaPlugin,
            network_topology.NAME: network_topology.NetworkTopologyPlugin,
            deviceshare.NAME: deviceshare.DeviceSharePlugin,
        }
    )
