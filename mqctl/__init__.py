"""mqctl: admin and migration tool for the message-queue layer of Milvus."""

__version__ = "0.1.0"
