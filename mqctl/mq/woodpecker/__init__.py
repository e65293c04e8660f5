"""Woodpecker, the WAL Milvus 2.6+ embeds: its log and segment metadata in etcd.

Format from Woodpecker v0.1.x source (cited per module); not yet verified on a running 2.6. Reading the
segment files themselves (local `data.log`, object `N.blk`/`footer.blk`) is not supported yet.
"""
