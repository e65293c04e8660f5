"""Ports for servers mqctl starts: a sandbox's ports must survive its own restarts (see restartable_ports)."""

from __future__ import annotations

import socket

import pytest

from mqctl.host.ports import ephemeral_range, port_is_free, restartable_ports


def test_restartable_ports_lie_outside_the_kernels_ephemeral_range():
    """The kernel hands ephemeral ports to any `bind(0)` and outgoing connection, so a sandbox that stopped could
    find its port taken on restart (seen in CI: `ports in use by another program: data_coord_port=39069`)."""
    low, high = ephemeral_range()
    ports = restartable_ports(13)
    assert len(set(ports)) == 13
    assert all(not low <= port <= high and port >= 20000 for port in ports), (ports, low, high)
    assert all(port_is_free(port) for port in ports)


def test_the_range_is_read_from_the_kernel_and_defaults_to_linuxs(tmp_path):
    source = tmp_path / "ip_local_port_range"
    source.write_text("40000\t50000\n")
    assert ephemeral_range(source) == (40000, 50000)
    source.write_text("garbage")
    assert ephemeral_range(source) == (32768, 60999)
    assert ephemeral_range(tmp_path / "missing") == (32768, 60999)


def test_a_port_someone_listens_on_is_skipped_and_none_left_falls_back_to_the_kernels_choice():
    """A range that leaves one candidate (65535): taken by a listener, the kernel's free port is returned."""
    with socket.socket() as listener:
        try:
            listener.bind(("127.0.0.1", 65535))
        except OSError:
            pytest.skip("port 65535 is taken on this machine")
        listener.listen()
        (fallback,) = restartable_ports(1, ephemeral=(1024, 65534))
        assert fallback != 65535 and port_is_free(fallback)
    assert restartable_ports(1, ephemeral=(1024, 65534)) == [65535]


def test_a_port_an_earlier_servers_connection_holds_in_time_wait_is_skipped():
    """The `milvus` package binds each port of a new sandbox without SO_REUSEADDR, so a port whose earlier
    listener (with SO_REUSEADDR, as Go's) left a connection in TIME_WAIT fails there although a Go server could
    bind it (seen in CI: `set data_coord_port=62726, but bind failed`). One candidate (65534), put in TIME_WAIT."""
    port = 65534
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(("127.0.0.1", port))
        except OSError:
            pytest.skip(f"port {port} is taken on this machine")
        listener.listen()
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = listener.accept()
        accepted.close()  # the server's side closes first: it is the one left in TIME_WAIT
        client.recv(1)
        client.close()
    assert port_is_free(port), "a Go server could listen on it again"
    assert not port_is_free(port, reuse_address=False)
    (chosen,) = restartable_ports(1, ephemeral=(65535, 65535), lowest=port)
    assert chosen != port and port_is_free(chosen, reuse_address=False)
