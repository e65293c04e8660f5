"""Where the `rows` shape gets a collection's schema from, best first:

1. `--milvus URI`: Milvus's own description of the collection;
2. the stream: the CreateCollection message Milvus wrote into the collection's channels;
3. inferred: the field names and types every insert carries. After a switch to NATS the streams
   hold no CreateCollection message, so this is the usual case for natsmq stores; the primary key
   is then the Int64/VarChar field with the lowest field id (see mqctl.mq.decode.messages).
"""

from __future__ import annotations

from mqctl.errors import InputError, PreconditionError
from mqctl.milvus.protos import import_pymilvus
from mqctl.mq.decode.schemas import CollectionSchemaInfo, FieldInfo
from mqctl.mq.model import MQSource
from mqctl.replay.reader.options import ReplayOptions
from mqctl.replay.reader.rows import collection_matches
from mqctl.sorting import ascii_int

CREATE_COLLECTION, INSERT = 100, 400
FIRST_USER_FIELD_ID = 100


def find_schema(source: MQSource, opts: ReplayOptions) -> tuple[CollectionSchemaInfo, str]:
    """The collection's schema and where it came from: "milvus", "stream" or "inferred"."""
    wanted = opts.collection
    if wanted is None:
        raise InputError("the rows shape needs a collection", hint="pass --collection NAME")
    if opts.milvus:
        schema, origin = fetch_from_milvus(opts.milvus, opts.milvus_token, wanted), "milvus"
    else:
        found = scan_stream(source, opts.select_channels([info.name for info in source.list_channels()]), wanted)
        if found is None:
            raise InputError(
                f"collection {opts.collection!r} not found in the stream of {opts.source_label} "
                "(no CreateCollection or insert message of it) and no --milvus given",
                hint="check --collection and --channels, or pass --milvus URI to take the schema from Milvus",
            )
        schema, origin = found
    # RowID and Timestamp (field ids 0 and 1) are Milvus's own; `_ts` carries the row's timestamp.
    schema.fields = [f for f in schema.fields if f.field_id is None or f.field_id >= FIRST_USER_FIELD_ID]
    return schema, origin


def scan_stream(source: MQSource, channels: list[str], wanted: str) -> tuple[CollectionSchemaInfo, str] | None:
    """The collection's first message in the stream: a CreateCollection gives the schema, an insert
    first means the stream no longer holds one (it precedes inserts), so the schema is inferred.
    Channels are read in turn, a message each, so channels without the collection are not read to
    their end first."""
    from mqctl.mq.decode.messages import decode
    from mqctl.mq.decode.schemas import schema_from_create, schema_from_insert

    readers = [source.iter_messages(channel) for channel in channels]
    wanted_id = ascii_int(wanted)
    try:
        while readers:
            for reader in list(readers):
                raw = next(reader, None)
                if raw is None:
                    readers.remove(reader)
                    continue
                msg = decode(raw.data, raw.headers)
                if msg.type_code == CREATE_COLLECTION:
                    schema = schema_from_create(msg)
                    if schema is not None and (
                        schema.name == wanted or (wanted_id is not None and schema.collection_id == wanted_id)
                    ):
                        return schema, "stream"
                elif msg.type_code == INSERT and collection_matches(msg, wanted):
                    inferred = schema_from_insert(msg)
                    if inferred is not None:
                        return inferred, "inferred"
    finally:
        for reader in readers:
            reader.close()
    return None


def fetch_from_milvus(uri: str, token: str | None, wanted: str) -> CollectionSchemaInfo:
    """Describe the collection through Milvus's gRPC API (pymilvus)."""
    from urllib.parse import unquote

    import_pymilvus()
    from pymilvus import MilvusClient
    from pymilvus.exceptions import MilvusException

    from mqctl.urls import split_url

    parts, user, password = split_url(uri, "--milvus")  # user:password@ becomes the login, never printed
    uri = parts.geturl()
    try:
        client = MilvusClient(
            uri=uri, user=unquote(user or ""), password=unquote(password or ""), token=token or "", timeout=15
        )
    except MilvusException as err:
        raise PreconditionError(
            f"cannot connect to Milvus at {uri}: {err.message}",
            hint="check --milvus (e.g. http://127.0.0.1:19530) and that Milvus runs",
        ) from None
    try:
        names = [wanted]
        if ascii_int(wanted) is not None:
            names = [
                name
                for name in client.list_collections()
                if str(client.describe_collection(name).get("collection_id")) == wanted
            ] or names
        try:
            described = client.describe_collection(names[0])
        except MilvusException:
            raise InputError(
                f"collection {wanted!r} not found in Milvus at {uri}", hint="check --collection (a name or an id)"
            ) from None
    finally:
        client.close()
    fields = [
        FieldInfo(
            name=f["name"],
            type=_type_name(f["type"]),
            field_id=f.get("field_id"),
            is_primary=bool(f.get("is_primary")),
            auto_id=bool(f.get("auto_id")),
            element_type=_type_name(f["element_type"]) if f.get("element_type") else None,
        )
        for f in described["fields"]
    ]
    if described.get("enable_dynamic_field") and not any(f.name == "$meta" for f in fields):
        fields.append(FieldInfo(name="$meta", type="JSON", is_dynamic=True))  # the dynamic field inserts carry
    return CollectionSchemaInfo(
        name=described["collection_name"],
        fields=fields,
        collection_id=described.get("collection_id"),
        enable_dynamic_field=bool(described.get("enable_dynamic_field")),
    )


def _type_name(value: object) -> str:
    return getattr(value, "name", None) or str(value)
