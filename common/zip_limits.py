"""How many members a zip declares, read from its end record before anything else is parsed.

`zipfile.ZipFile` reads the whole central directory into memory at once, some 400 bytes of Python
objects per member, so a small file of a million empty members costs far more memory than any real
upload. Callers refuse a zip whose declared count is over their limit before opening it.
"""

from typing import BinaryIO

END_RECORD = b"PK\x05\x06"
ZIP64_END_RECORD = b"PK\x06\x06"
ZIP64_LOCATOR = b"PK\x06\x07"
END_SEARCH_BYTES = 22 + 65535  # the end record and the longest comment a zip can have


def zip_member_count(stream: BinaryIO) -> int | None:
    """The member count a zip's end record declares (zip64 too), or None when there is no end record.

    Reads only the file's tail (and a zip64 end record); leaves the stream at position 0.
    """
    stream.seek(0, 2)
    size = stream.tell()
    stream.seek(max(0, size - END_SEARCH_BYTES))
    tail = stream.read()
    stream.seek(0)
    at = tail.rfind(END_RECORD)
    if at < 0 or len(tail) < at + 22:
        return None
    count = int.from_bytes(tail[at + 10 : at + 12], "little")
    locator = at - 20
    if count == 0xFFFF and locator >= 0 and tail[locator : locator + 4] == ZIP64_LOCATOR:
        stream.seek(int.from_bytes(tail[locator + 8 : locator + 16], "little"))
        record = stream.read(56)
        stream.seek(0)
        if record[:4] == ZIP64_END_RECORD and len(record) == 56:
            count = int.from_bytes(record[32:40], "little")
    return count
