"""Stand-ins for the KV connector a vLLM config names, for the hash lookahead's resolution.

0.34.0's `VllmConfig._resolve_num_hash_lookahead_tokens` asks the connector class
(`KVConnectorFactory.get_connector_class`) whether it `supports_lookahead_block_hashes`. The factory is a
stand-in that hands back, for the native offload connector, a stand-in for `OffloadingConnector`, and for
any other connector one for `KVConnectorBase_V1` (what a connector that does not opt in inherits): each
runs the class's classmethods from the source, so the opt-in is read as the release ships it.
"""

from __future__ import annotations

from proofs.source.standins import StandIn

FACTORY = "vllm.distributed.kv_transfer.kv_connector.factory"
OFFLOADING = ("vllm.distributed.kv_transfer.kv_connector.v1.offloading_connector", "OffloadingConnector")
BASE = ("vllm.distributed.kv_transfer.kv_connector.v1.base", "KVConnectorBase_V1")
NATIVE, OTHER = "OffloadingConnector", "another KV connector"


def transfer_config(native: bool) -> StandIn:
    return StandIn(
        "the KV transfer config",
        kv_connector=NATIVE if native else OTHER,
        kv_connector_module_path=None,
        kv_connector_extra_config={},
    )


class _Factory:
    def __init__(self, loader) -> None:
        self.loader = loader

    def get_connector_class(self, kv_transfer_config):
        module, cls = OFFLOADING if kv_transfer_config.kv_connector == NATIVE else BASE
        return StandIn(f"the connector class {cls}", _methods=(self.loader, module, cls))


def stand_ins(loader) -> dict[str, object]:
    return {f"{FACTORY}.KVConnectorFactory": _Factory(loader)}
