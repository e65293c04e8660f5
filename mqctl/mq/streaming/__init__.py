"""Milvus 2.6+ Streaming Service state kept in etcd: pchannel assignments (streaming coordinator), WAL
checkpoints with the AlterWAL stage and vchannel meta (streaming nodes), datacoord's channel checkpoints with
their WAL name, and the mq.type pinned at first boot.

Format from Milvus v2.6.x source (cited per module); not yet verified on a running 2.6.
"""

VERIFICATION = (
    "format from Milvus v2.6.x / Woodpecker v0.1.x source, checked on bytes upstream's code wrote (Woodpecker v0.1.13, "
    "v0.1.37); not yet verified on a running 2.6"
)
