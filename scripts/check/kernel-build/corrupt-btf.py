#!/usr/bin/env python3
"""Writes a copy of raw BTF whose first struct member points at a type id no BTF has, which
the kernel rejects ("Invalid type_id"): the negative control of kernel-build.sh's boot check.

    corrupt-btf.py IN OUT     # exit 2 when IN has no struct with members

Reads the records as the BTF format lays them out (little endian, the 24- or 32-byte header);
it shares no code with dwarf2btf, whose output it corrupts.
"""

import struct
import sys

# Bytes after the 12-byte common record, per kind: fixed part, per-vlen entry.
EXTRA = {1: (4, 0), 3: (12, 0), 4: (0, 12), 5: (0, 12), 6: (0, 8), 13: (0, 8), 14: (4, 0),
         15: (0, 12), 17: (4, 0), 19: (0, 12)}
STRUCT = 4
BAD_TYPE_ID = 0x00FFFFF0


def main():
    src, dst = sys.argv[1], sys.argv[2]
    data = bytearray(open(src, "rb").read())
    hdr_len, type_off, type_len = struct.unpack_from("<III", data, 4)
    at = hdr_len + type_off
    end = at + type_len
    while at < end:
        info = struct.unpack_from("<I", data, at + 4)[0]
        kind, vlen = (info >> 24) & 0x1F, info & 0xFFFF
        if kind == STRUCT and vlen > 0:
            # The first member: name_off, type, offset, right after the record's 12 bytes.
            struct.pack_into("<I", data, at + 16, BAD_TYPE_ID)
            open(dst, "wb").write(data)
            return
        fixed, per = EXTRA.get(kind, (0, 0))
        at += 12 + fixed + per * vlen
    sys.exit(2)


if __name__ == "__main__":
    main()
