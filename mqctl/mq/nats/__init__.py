"""NATS JetStream (natsmq): connection options, the live client, the private server, the store on disk, retention."""
