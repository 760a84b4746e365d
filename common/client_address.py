"""The client's address, for limits counted per address (sign-in lockout, crowd-study arrivals).

Behind a TLS-terminating proxy every connection comes from the proxy, so REMOTE_ADDR alone would count every
visitor as one person. X-Forwarded-For says who the proxy talked to, but anyone can send that header: it is
believed only when the connection itself comes from a proxy listed in TRUSTED_PROXIES (addresses or networks).
The header is then read from the right (each proxy appends the address it saw): the first address that is not a
trusted proxy is the client, so a value the client put at the left of the header is never taken. A direct
connection, or one from an address not listed, is its own REMOTE_ADDR whatever it sends.
"""

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def trusted_networks_parse(values: Iterable[str], *, name: str = "TRUSTED_PROXIES") -> tuple[Network, ...]:
    """Addresses or CIDR networks ("10.0.0.5", "10.0.0.0/8", "::1"); ValueError naming `name` and the entry."""
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{name}: {value!r} is neither an IP address nor a network such as 10.0.0.0/8") from None
    return tuple(networks)


def _address(value: str) -> Address | None:
    """An address as proxies write it: bare, or IPv6 in brackets; a port after it is dropped. None when it is not
    an address (a name, "unknown", garbage)."""
    value = value.strip()
    if value.startswith("["):  # [2001:db8::1]:443
        value = value[1:].split("]", 1)[0]
    elif value.count(":") == 1:  # 203.0.113.7:51234
        value = value.split(":", 1)[0]
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    # An IPv4 client seen by an IPv6 socket: the same person as its IPv4 form.
    return address.ipv4_mapped or address if isinstance(address, ipaddress.IPv6Address) else address


def _is_trusted(address: Address, trusted: Sequence[Network]) -> bool:
    return any(address.version == network.version and address in network for network in trusted)


def client_address_from(*, remote_address: str, forwarded_for: str, trusted: Sequence[Network]) -> str:
    """The client's address given the connection's address, the X-Forwarded-For header ("" when absent) and the
    trusted proxies."""
    connection = _address(remote_address)
    if connection is None or not trusted or not _is_trusted(connection, trusted):
        return remote_address
    client = connection
    for entry in reversed(forwarded_for.split(",") if forwarded_for.strip() else []):
        hop = _address(entry)
        if hop is None:
            # Not an address where a trusted proxy writes one: whatever stands further left came from the
            # client, so the nearest hop known is the answer.
            break
        client = hop
        if not _is_trusted(hop, trusted):
            break
    return str(client)


def client_address(request) -> str:
    """The client address of a Django (or DRF) request under settings.TRUSTED_PROXIES ("" when it has none)."""
    from django.conf import settings

    return client_address_from(
        remote_address=request.META.get("REMOTE_ADDR", "") or "",
        forwarded_for=request.META.get("HTTP_X_FORWARDED_FOR", "") or "",
        trusted=settings.TRUSTED_PROXIES,
    )
