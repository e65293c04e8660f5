"""Milvus 2.6 message ids decode alike from independent encodings (tests/helpers/streaming_meta.py builds them from the
`.proto` field numbers); `channels checkpoints` on 2.6 state: tests/cli/channels/test_checkpoints_streaming.py."""

from __future__ import annotations

import base64

from tests.helpers import streaming_meta as enc


def test_message_ids_decode_from_independent_encodings():
    from mqctl.mq.streaming.message_ids import from_message_id, from_position_bytes

    wp_text = base64.b64encode(enc.wp_id_bytes(12, 345)).decode()
    assert from_message_id("woodpecker", wp_text).order == (12, 345)
    assert from_message_id("rocksmq", enc.base36(470632480411222019)).text == "470632480411222019"
    pulsar_text = base64.b64encode(enc.pulsar_id_bytes(88, 9, 2)).decode()
    assert from_message_id("pulsar", pulsar_text).text == "88/9/2"
    assert from_position_bytes("kafka", (31).to_bytes(8, "little")).text == "31"
    assert from_message_id("woodpecker", "not base64!").order is None
