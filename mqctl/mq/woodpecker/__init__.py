"""Woodpecker, the WAL Milvus 2.6+ embeds: its log and segment metadata in etcd (meta.py), its segment files
(segments.py) in a local folder or an S3/MinIO bucket (storage.py), where a config puts them (location.py), and
its logs as MQ channels (source.py).

Format from Woodpecker v0.1.x source (cited per module); not yet verified on a running 2.6.
"""
